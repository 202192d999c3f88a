#ifndef OFFLINESTORE_CCURL_SHIM_H
#define OFFLINESTORE_CCURL_SHIM_H

#include <stddef.h>

#include <curl/curl.h>

// Swift cannot call C variadic functions: curl_easy_setopt and
// curl_easy_getinfo take their value as a variadic argument whose C type
// depends on the option. Each wrapper below passes exactly one C type, and the
// Swift layer (Sources/SyncClient/Transport/CurlEasy.swift) only hands each one
// options of that type, so a long never reaches a string option.
//
// libcurl API: https://curl.se/libcurl/c/curl_easy_setopt.html and
// https://curl.se/libcurl/c/curl_easy_getinfo.html. Debian 12 ships 7.88.1
// (libcurl4-openssl-dev, OpenSSL backend).

/// The signature of CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION
/// (https://curl.se/libcurl/c/CURLOPT_WRITEFUNCTION.html).
typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *context);

/// curl_easy_setopt for CURLOPTTYPE_LONG and CURLOPTTYPE_VALUES options
/// (CURLOPT_NOSIGNAL, CURLOPT_CONNECTTIMEOUT_MS, CURLOPT_HTTP_VERSION, ...).
static inline CURLcode ccurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for CURLOPTTYPE_OFF_T options (CURLOPT_POSTFIELDSIZE_LARGE).
static inline CURLcode ccurl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for CURLOPTTYPE_STRINGPOINT options, which libcurl copies
/// (CURLOPT_URL, CURLOPT_CAINFO, CURLOPT_USERAGENT, ...). NULL restores the default.
static inline CURLcode ccurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for CURLOPTTYPE_OBJECTPOINT options that libcurl does not
/// copy (CURLOPT_POSTFIELDS, CURLOPT_ERRORBUFFER, CURLOPT_WRITEDATA,
/// CURLOPT_HEADERDATA): the memory must stay valid while the handle uses it.
static inline CURLcode ccurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for CURLOPTTYPE_SLISTPOINT options (CURLOPT_HTTPHEADER);
/// the list is not copied and must outlive the transfer.
static inline CURLcode ccurl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

/// curl_easy_setopt for CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION.
static inline CURLcode ccurl_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

/// The signature of CURLOPT_XFERINFOFUNCTION: returning non-zero aborts the
/// transfer with CURLE_ABORTED_BY_CALLBACK
/// (https://curl.se/libcurl/c/CURLOPT_XFERINFOFUNCTION.html).
typedef int (*ccurl_xferinfo_callback)(void *context, curl_off_t download_total, curl_off_t downloaded,
                                       curl_off_t upload_total, curl_off_t uploaded);

/// curl_easy_setopt for CURLOPT_XFERINFOFUNCTION.
static inline CURLcode ccurl_setopt_xferinfo_callback(CURL *handle, ccurl_xferinfo_callback value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}

/// curl_easy_getinfo for CURLINFO_LONG values (CURLINFO_RESPONSE_CODE,
/// CURLINFO_NUM_CONNECTS, ...).
static inline CURLcode ccurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// curl_easy_getinfo for CURLINFO_OFF_T values (CURLINFO_TOTAL_TIME_T, ...).
static inline CURLcode ccurl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}

/// CURL_ERROR_SIZE, the size CURLOPT_ERRORBUFFER must have.
static inline size_t ccurl_error_size(void) {
    return CURL_ERROR_SIZE;
}

#endif
