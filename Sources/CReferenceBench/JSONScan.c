#include "CReferenceBench.h"

#include <stdlib.h>

int64_t ref_json_scan(const uint8_t *bytes, int64_t count) {
    int64_t tokens = 0;
    for (int64_t i = 0; i < count; i++) {
        switch (bytes[i]) {
        case '"':
            tokens++;
            for (i++; i < count && bytes[i] != '"'; i++) {
                if (bytes[i] == '\\') i++;
            }
            if (i >= count) return -1;
            break;
        case '{': case '}': case '[': case ']': case ':': case ',':
            tokens++;
            break;
        default:
            break;
        }
    }
    return tokens;
}

int64_t ref_json_copy_escaped(const uint8_t *bytes, int64_t count) {
    static const char hex[] = "0123456789abcdef";
    // Sized like a writer's buffer for text with few escapes, grown when escapes need more.
    int64_t capacity = count + 64;
    uint8_t *out = malloc((size_t)capacity);
    if (out == NULL) return -1;
    int64_t written = 0;
    for (int64_t i = 0; i < count; i++) {
        if (written + 6 > capacity) {
            capacity *= 2;
            uint8_t *larger = realloc(out, (size_t)capacity);
            if (larger == NULL) {
                free(out);
                return -1;
            }
            out = larger;
        }
        uint8_t byte = bytes[i];
        if (byte < 0x20) {
            out[written++] = '\\';
            out[written++] = 'u';
            out[written++] = '0';
            out[written++] = '0';
            out[written++] = (uint8_t)hex[byte >> 4];
            out[written++] = (uint8_t)hex[byte & 15];
        } else {
            out[written++] = byte;
        }
    }
    // Read the copy back so the writes are not dead stores.
    int64_t sum = written + out[written / 2];
    free(out);
    return sum;
}
