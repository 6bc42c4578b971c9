import CCurl
import Foundation

/// One libcurl easy handle, cleaned up with its owner; reused, it keeps its connections open.
/// One transfer at a time, on one thread at a time.
package final class CurlEasy {
    /// The handle libcurl knows.
    package let handle: UnsafeMutableRawPointer
    /// What the running (or last) transfer's callbacks write to, kept alive as long as libcurl
    /// may call them.
    private var exchange: CurlExchange?

    /// A new handle; `nil` when libcurl cannot make one.
    package init?() {
        CurlLibrary.prepareProcess()
        guard let handle = curl_easy_init() else { return nil }
        self.handle = handle
    }

    deinit {
        curl_easy_cleanup(handle)
    }

    /// Sets a number (or a flag, as 0 or 1) option.
    @discardableResult
    package func set(_ option: CURLoption, _ value: Int) -> CURLcode {
        homeport_curl_set_long(handle, option, value)
    }

    /// Sets a text option (libcurl copies it).
    @discardableResult
    package func set(_ option: CURLoption, _ value: String) -> CURLcode {
        homeport_curl_set_string(handle, option, value)
    }

    /// Sets a list option: `list` must outlive the transfer.
    @discardableResult
    package func set(_ option: CURLoption, _ list: CurlHeaderList) -> CURLcode {
        homeport_curl_set_slist(handle, option, list.pointer)
    }

    /// Sets a pointer option.
    @discardableResult
    package func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) -> CURLcode {
        homeport_curl_set_pointer(handle, option, pointer)
    }

    /// What every HTTP exchange of Homeport's is: `url` with `headers`, HTTP or HTTPS only, no
    /// redirect followed, no signal, and no proxy but `proxy` (`""`: none, whatever the
    /// environment's `http_proxy` or `ALL_PROXY` say).
    package func useHTTP(url: String, headers: CurlHeaderList, proxy: String = "") {
        set(CURLOPT_URL, url)
        set(CURLOPT_HTTPHEADER, headers)
        set(CURLOPT_NOSIGNAL, 1)
        set(CURLOPT_FOLLOWLOCATION, 0)
        set(CURLOPT_PROTOCOLS_STR, "http,https")
        set(CURLOPT_PROXY, proxy)
        set(CURLOPT_NOPROXY, "")
    }

    /// A whole-seconds limit on the transfer, and on connecting at most 10 of them.
    package func limit(seconds: Int) {
        set(CURLOPT_TIMEOUT, seconds)
        set(CURLOPT_CONNECTTIMEOUT, min(10, seconds))
    }

    /// Sends `body` as a POST; libcurl keeps its own copy until the transfer ends.
    package func post(_ body: some ContiguousBytes) {
        body.withUnsafeBytes { bytes in
            set(CURLOPT_POST, 1)
            set(CURLOPT_POSTFIELDSIZE, bytes.count)
            // Never a null pointer: libcurl would then read the body from standard input.
            guard let start = bytes.baseAddress, !bytes.isEmpty else {
                set(CURLOPT_COPYPOSTFIELDS, "")
                return
            }
            set(CURLOPT_COPYPOSTFIELDS, pointer: UnsafeMutableRawPointer(mutating: start))
        }
    }

    /// Hands the answer to `exchange`: its body, its head, whether the request went out, and,
    /// when `abortable`, a question about once a second whether to stop.
    package func attach(_ exchange: CurlExchange, abortable: Bool = false) {
        self.exchange = exchange
        exchange.handle = handle
        let context = Unmanaged.passUnretained(exchange).toOpaque()
        set(CURLOPT_WRITEDATA, pointer: context)
        set(CURLOPT_HEADERDATA, pointer: context)
        set(CURLOPT_PREREQDATA, pointer: context)
        _ = homeport_curl_set_write_function(handle, CurlExchange.writeCallback)
        _ = homeport_curl_set_header_function(handle, CurlExchange.headerCallback)
        // A function pointer passed where libcurl reads one: the shim has no typed setter for it.
        set(
            CURLOPT_PREREQFUNCTION,
            pointer: unsafeBitCast(CurlExchange.prereqCallback, to: UnsafeMutableRawPointer.self))
        if abortable {
            set(CURLOPT_XFERINFODATA, pointer: context)
            set(CURLOPT_NOPROGRESS, 0)
            _ = homeport_curl_set_progress_function(handle, CurlExchange.progressCallback)
        }
    }

    /// Runs the transfer to its end.
    package func perform() -> CURLcode {
        curl_easy_perform(handle)
    }

    /// The last answer's status (0 before one).
    package var status: Int {
        homeport_curl_status(handle)
    }
}
