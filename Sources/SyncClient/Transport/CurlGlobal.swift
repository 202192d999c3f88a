import CCurl

/// libcurl's process-wide setup, done once before the first easy handle is made.
///
/// `curl_global_init` must run before any other libcurl call and, in libcurl builds without the
/// `threadsafe` feature (before 7.84), must not run on two threads at once. A `static let` is
/// initialised exactly once, under the Swift runtime's own once-lock, whichever thread gets there
/// first, so both rules hold without a lock of ours. `curl_global_cleanup` is never called: the
/// process keeps libcurl until it exits, as the libcurl documentation allows.
///
/// See https://curl.se/libcurl/c/curl_global_init.html and https://curl.se/libcurl/c/threadsafe.html.
enum CurlGlobal {
    /// `curl_global_init(CURL_GLOBAL_DEFAULT)`'s result, computed on first use.
    private static let initialization: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    /// Runs `curl_global_init` if no thread has yet; `nil` when it succeeded, else its code.
    static func initialize() -> CURLcode? {
        initialization == CURLE_OK ? nil : initialization
    }
}
