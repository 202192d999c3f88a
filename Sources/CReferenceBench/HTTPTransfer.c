#include "CReferenceBench.h"

#include <curl/curl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

// The transport under the sync benchmark's limit: the same HTTP libraries the engine and the
// server use (libcurl, libmicrohttpd), the same requests and body sizes, and nothing done with
// the bytes on either side beyond receiving them.

typedef struct {
    const int64_t *response_sizes;
    int64_t count;
    const char *filler;
    /// Request bytes received by the server, all requests together.
    int64_t received;
    int failed;
    /// The per-request marker handed back through con_cls: non-NULL once headers were seen.
    int marker;
} sink_state;

/// MHD_AccessHandlerCallback: the first call (headers) only marks the request; the next calls
/// hand over the body in pieces, which are counted and dropped; the last call (no more data)
/// answers request `/<index>` with response_sizes[index] bytes.
static enum MHD_Result sink_access(void *cls, struct MHD_Connection *connection, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls) {
    (void)method;
    (void)version;
    (void)upload_data;
    sink_state *state = cls;
    if (*con_cls == NULL) {
        *con_cls = &state->marker;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        state->received += (int64_t)*upload_data_size;
        *upload_data_size = 0;
        return MHD_YES;
    }
    char *end = NULL;
    long long index = strtoll(url + 1, &end, 10);
    if (index < 0 || index >= state->count || end == url + 1) {
        state->failed = 1;
        return MHD_NO;
    }
    struct MHD_Response *response = MHD_create_response_from_buffer(
        (size_t)state->response_sizes[index], (void *)state->filler, MHD_RESPMEM_PERSISTENT);
    if (!response) return MHD_NO;
    MHD_add_response_header(response, "Content-Type", "application/json");
    enum MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_OK, response);
    MHD_destroy_response(response);
    return queued;
}

static size_t count_body(char *data, size_t size, size_t count, void *context) {
    (void)data;
    *(int64_t *)context += (int64_t)(size * count);
    return size * count;
}

int ref_http_transfer(int64_t count, const int64_t *request_sizes, const int64_t *response_sizes,
                      int64_t *out_nanoseconds) {
    int64_t largest = 1;
    int64_t requested = 0;
    int64_t expected = 0;
    for (int64_t i = 0; i < count; i++) {
        if (request_sizes[i] > largest) largest = request_sizes[i];
        if (response_sizes[i] > largest) largest = response_sizes[i];
        requested += request_sizes[i];
        expected += response_sizes[i];
    }
    char *filler = malloc((size_t)largest);
    if (!filler) return REF_HTTP_NO_MEMORY;
    memset(filler, 'x', (size_t)largest);
    sink_state state = {response_sizes, count, filler, 0, 0, 0};

    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    // The flags ostore-server's daemon uses: an internal polling thread with epoll.
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_EPOLL;
    struct MHD_Daemon *daemon =
        MHD_start_daemon(flags, 0, NULL, NULL, sink_access, &state, MHD_OPTION_SOCK_ADDR, &address, MHD_OPTION_END);
    if (!daemon) {
        free(filler);
        return REF_HTTP_SERVER_FAILED;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : 0;

    int rc = 0;
    CURL *easy = curl_easy_init();
    struct curl_slist *headers = NULL;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");
    int64_t received = 0;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int64_t i = 0; easy && headers && rc == 0 && i < count; i++) {
        char url[64];
        snprintf(url, sizeof url, "http://127.0.0.1:%u/%lld", port, (long long)i);
        curl_easy_setopt(easy, CURLOPT_URL, url);
        curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(easy, CURLOPT_POST, 1L);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDS, filler);
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)request_sizes[i]);
        curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, count_body);
        curl_easy_setopt(easy, CURLOPT_WRITEDATA, &received);
        if (curl_easy_perform(easy) != CURLE_OK) rc = REF_HTTP_TRANSFER_FAILED;
        long status = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200) rc = REF_HTTP_TRANSFER_FAILED;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    if (!easy || !headers) rc = REF_HTTP_TRANSFER_FAILED;
    curl_slist_free_all(headers);
    curl_easy_cleanup(easy);
    MHD_stop_daemon(daemon);
    free(filler);
    if (rc == 0 && (state.failed || state.received != requested || received != expected)) rc = REF_HTTP_TRANSFER_FAILED;
    *out_nanoseconds = (int64_t)(end.tv_sec - start.tv_sec) * 1000000000 + (end.tv_nsec - start.tv_nsec);
    return rc;
}
