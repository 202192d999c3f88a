import CCurl
import Foundation

/// Owns one libcurl easy handle (`CURL *`) and the error buffer registered with it: made by
/// `curl_easy_init`, released by `curl_easy_cleanup` in `deinit`. Every call into libcurl's easy
/// interface goes through here, with options typed by the C type libcurl expects for them.
///
/// Not `Sendable`: libcurl forbids using one handle from two threads at once
/// (https://curl.se/libcurl/c/threadsafe.html). `HTTPClient` keeps it behind its lock.
final class CurlEasy {
    /// The `CURL *`; libcurl's `typedef void CURL`.
    private let handle: UnsafeMutableRawPointer
    /// `CURL_ERROR_SIZE` bytes where libcurl writes its message for a failed transfer.
    private let errorBuffer: UnsafeMutablePointer<CChar>

    /// Makes the handle (running `curl_global_init` first, once per process).
    init() throws(CurlSetupFailure) {
        if let code = CurlGlobal.initialize() { throw CurlSetupFailure(code: code, what: "curl_global_init") }
        guard let handle = curl_easy_init() else {
            throw CurlSetupFailure(code: CURLE_FAILED_INIT, what: "curl_easy_init")
        }
        self.handle = handle
        errorBuffer = .allocate(capacity: ccurl_error_size())
        errorBuffer.initialize(repeating: 0, count: ccurl_error_size())
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }

    /// `curl_easy_reset`: every option back to its default, while live connections, the DNS cache
    /// and TLS session IDs stay (so keep-alive survives), then the error buffer registered again.
    /// https://curl.se/libcurl/c/curl_easy_reset.html
    func reset() throws(CurlSetupFailure) {
        curl_easy_reset(handle)
        errorBuffer[0] = 0
        try check(ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), "CURLOPT_ERRORBUFFER")
    }

    func set(_ option: LongOption, _ value: Int) throws(CurlSetupFailure) {
        try check(ccurl_setopt_long(handle, option.option, value), option.name)
    }

    func set(_ option: OffsetOption, _ value: Int64) throws(CurlSetupFailure) {
        try check(ccurl_setopt_off_t(handle, option.option, curl_off_t(value)), option.name)
    }

    /// libcurl copies the string (https://curl.se/libcurl/c/curl_easy_setopt.html, "Strings").
    func set(_ option: StringOption, _ value: String) throws(CurlSetupFailure) {
        try check(ccurl_setopt_string(handle, option.option, value), option.name)
    }

    /// The pointer must stay valid until the next `reset` or the end of the transfer that uses it.
    func set(_ option: PointerOption, _ value: UnsafeMutableRawPointer?) throws(CurlSetupFailure) {
        try check(ccurl_setopt_pointer(handle, option.option, value), option.name)
    }

    func set(_ option: CallbackOption, _ value: ccurl_data_callback) throws(CurlSetupFailure) {
        try check(ccurl_setopt_data_callback(handle, option.option, value), option.name)
    }

    /// `CURLOPT_HTTPHEADER`; the list must outlive the transfer.
    /// `CURLOPT_XFERINFOFUNCTION`, called while the transfer runs (about once a second while
    /// nothing moves): returning non-zero aborts it.
    func setProgress(_ value: ccurl_xferinfo_callback) throws(CurlSetupFailure) {
        try check(ccurl_setopt_xferinfo_callback(handle, value), "CURLOPT_XFERINFOFUNCTION")
    }

    func setHeaders(_ list: CurlHeaderList) throws(CurlSetupFailure) {
        try check(ccurl_setopt_slist(handle, CURLOPT_HTTPHEADER, list.head), "CURLOPT_HTTPHEADER")
    }

    /// `curl_easy_perform`: runs the transfer on this thread; callbacks run inside it.
    /// https://curl.se/libcurl/c/curl_easy_perform.html
    func perform() -> CURLcode {
        errorBuffer[0] = 0
        return curl_easy_perform(handle)
    }

    /// What libcurl wrote into the error buffer during the last transfer (may be empty).
    var errorText: String {
        String(cString: errorBuffer)
    }

    /// A `long` from `curl_easy_getinfo`, or nil when libcurl cannot tell.
    func info(_ info: LongInfo) -> Int? {
        var value = 0
        return ccurl_getinfo_long(handle, info.info, &value) == CURLE_OK ? value : nil
    }

    private func check(_ code: CURLcode, _ what: String) throws(CurlSetupFailure) {
        guard code == CURLE_OK else { throw CurlSetupFailure(code: code, what: what) }
    }
}

/// A libcurl call that failed while setting up a transfer (not the transfer itself).
struct CurlSetupFailure: Error {
    let code: CURLcode
    /// The call or option: `CURLOPT_CAINFO`.
    let what: String

    var message: String {
        "\(what): \(String(cString: curl_easy_strerror(code)))"
    }
}

/// Options whose value is a C `long` (`CURLOPTTYPE_LONG`, `CURLOPTTYPE_VALUES`).
struct LongOption {
    let option: CURLoption
    let name: String

    static let noSignal = LongOption(option: CURLOPT_NOSIGNAL, name: "CURLOPT_NOSIGNAL")
    static let connectTimeoutMilliseconds = LongOption(
        option: CURLOPT_CONNECTTIMEOUT_MS, name: "CURLOPT_CONNECTTIMEOUT_MS")
    static let timeoutMilliseconds = LongOption(option: CURLOPT_TIMEOUT_MS, name: "CURLOPT_TIMEOUT_MS")
    static let lowSpeedLimit = LongOption(option: CURLOPT_LOW_SPEED_LIMIT, name: "CURLOPT_LOW_SPEED_LIMIT")
    static let lowSpeedTime = LongOption(option: CURLOPT_LOW_SPEED_TIME, name: "CURLOPT_LOW_SPEED_TIME")
    static let verifyPeer = LongOption(option: CURLOPT_SSL_VERIFYPEER, name: "CURLOPT_SSL_VERIFYPEER")
    static let verifyHost = LongOption(option: CURLOPT_SSL_VERIFYHOST, name: "CURLOPT_SSL_VERIFYHOST")
    static let httpVersion = LongOption(option: CURLOPT_HTTP_VERSION, name: "CURLOPT_HTTP_VERSION")
    static let httpGet = LongOption(option: CURLOPT_HTTPGET, name: "CURLOPT_HTTPGET")
    static let post = LongOption(option: CURLOPT_POST, name: "CURLOPT_POST")
    static let noBody = LongOption(option: CURLOPT_NOBODY, name: "CURLOPT_NOBODY")
    static let noProgress = LongOption(option: CURLOPT_NOPROGRESS, name: "CURLOPT_NOPROGRESS")
}

/// Options whose value is a `curl_off_t` (`CURLOPTTYPE_OFF_T`).
struct OffsetOption {
    let option: CURLoption
    let name: String

    static let postFieldSize = OffsetOption(
        option: CURLOPT_POSTFIELDSIZE_LARGE, name: "CURLOPT_POSTFIELDSIZE_LARGE")
}

/// Options whose value is a C string that libcurl copies (`CURLOPTTYPE_STRINGPOINT`).
struct StringOption {
    let option: CURLoption
    let name: String

    static let url = StringOption(option: CURLOPT_URL, name: "CURLOPT_URL")
    static let customRequest = StringOption(option: CURLOPT_CUSTOMREQUEST, name: "CURLOPT_CUSTOMREQUEST")
    static let userAgent = StringOption(option: CURLOPT_USERAGENT, name: "CURLOPT_USERAGENT")
    static let acceptEncoding = StringOption(option: CURLOPT_ACCEPT_ENCODING, name: "CURLOPT_ACCEPT_ENCODING")
    static let caInfo = StringOption(option: CURLOPT_CAINFO, name: "CURLOPT_CAINFO")
    static let protocols = StringOption(option: CURLOPT_PROTOCOLS_STR, name: "CURLOPT_PROTOCOLS_STR")
    /// A `char *` body that libcurl copies, of `CURLOPT_POSTFIELDSIZE_LARGE` bytes (set first).
    static let copyPostFields = StringOption(option: CURLOPT_COPYPOSTFIELDS, name: "CURLOPT_COPYPOSTFIELDS")
}

/// Options whose value is a pointer libcurl keeps without copying (`CURLOPTTYPE_OBJECTPOINT`,
/// `CURLOPTTYPE_CBPOINT`).
struct PointerOption {
    let option: CURLoption
    let name: String

    static let postFields = PointerOption(option: CURLOPT_POSTFIELDS, name: "CURLOPT_POSTFIELDS")
    static let writeData = PointerOption(option: CURLOPT_WRITEDATA, name: "CURLOPT_WRITEDATA")
    static let headerData = PointerOption(option: CURLOPT_HEADERDATA, name: "CURLOPT_HEADERDATA")
    static let progressData = PointerOption(option: CURLOPT_XFERINFODATA, name: "CURLOPT_XFERINFODATA")
}

/// `CURLOPT_WRITEFUNCTION` and `CURLOPT_HEADERFUNCTION`.
struct CallbackOption {
    let option: CURLoption
    let name: String

    static let writeFunction = CallbackOption(option: CURLOPT_WRITEFUNCTION, name: "CURLOPT_WRITEFUNCTION")
    static let headerFunction = CallbackOption(option: CURLOPT_HEADERFUNCTION, name: "CURLOPT_HEADERFUNCTION")
}

/// `curl_easy_getinfo` values that are a C `long` (`CURLINFO_LONG`).
struct LongInfo {
    let info: CURLINFO

    static let responseCode = LongInfo(info: CURLINFO_RESPONSE_CODE)
    static let numberOfConnects = LongInfo(info: CURLINFO_NUM_CONNECTS)
}

/// Owns a `struct curl_slist` of header lines (`curl_slist_append` copies each string), freed with
/// `curl_slist_free_all` in `deinit`. https://curl.se/libcurl/c/curl_slist_append.html
final class CurlHeaderList {
    private(set) var head: UnsafeMutablePointer<curl_slist>?

    init() {}

    deinit {
        curl_slist_free_all(head)
    }

    /// Appends one `Name: value` line (or `Name;` for an empty value, `Name:` to remove a header
    /// libcurl would add). False when libcurl is out of memory; the list is then unchanged.
    func append(_ line: String) -> Bool {
        guard let extended = curl_slist_append(head, line) else { return false }
        head = extended
        return true
    }
}
