import CCurl
import Foundation

/// One libcurl handle, kept between exchanges so its connection stays open (keep-alive), for
/// the server's exchanges with a push gateway, its Web Pushes, and the gateway's fetch of an
/// enrolling server.
/// One exchange at a time; HTTP and HTTPS only, no redirects, no proxy from the environment.
package final class CurlSession: @unchecked Sendable {
    private let lock = NSLock()
    private var curl: UnsafeMutableRawPointer?
    /// The CA file trusted instead of the system's, if any.
    let caFile: String?
    /// Longest wait for one exchange, in seconds.
    let timeoutSeconds: Int
    /// The largest answer read, in bytes.
    let byteLimit: Int
    /// Whether it connects to public addresses only, whatever a name resolves to (for URLs
    /// strangers name).
    let publicOnly: Bool

    package init(caFile: String? = nil, timeoutSeconds: Int = 30, byteLimit: Int = 16 << 20, publicOnly: Bool = false) {
        self.caFile = caFile
        self.timeoutSeconds = timeoutSeconds
        self.byteLimit = byteLimit
        self.publicOnly = publicOnly
    }

    deinit {
        if let curl { curl_easy_cleanup(curl) }
    }

    /// What came back: the status, the body, and the final answer's header fields (names
    /// lowercase; a field sent twice keeps its last value).
    package struct Answer {
        package var status: Int
        package var body: Data
        package var headers: [String: String] = [:]

        /// The seconds `Retry-After` asks for (0 to a day), when it gives a number.
        package var retryAfter: Int64? {
            headers["retry-after"].flatMap { Int64($0) }.map { min(max($0, 0), 86400) }
        }
    }

    /// Why there was no answer.
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Sends a request (a POST when `body` is given, else a GET) and waits for the answer.
    package func perform(_ url: String, headers: [String] = [], body: Data? = nil) -> Result<Answer, Failure> {
        lock.withLock {
            if curl == nil { curl = curl_easy_init() }
            guard let curl else { return .failure(Failure(description: "libcurl failed")) }
            let exchange = Exchange(limit: byteLimit)
            var list: UnsafeMutablePointer<curl_slist>?
            for header in headers + ["Expect:"] { list = curl_slist_append(list, header) }
            defer { curl_slist_free_all(list) }
            Self.setUp(curl, url: url, headers: list, timeoutSeconds: timeoutSeconds, publicOnly: publicOnly)
            if let caFile { _ = homeport_curl_set_string(curl, CURLOPT_CAINFO, caFile) }
            let context = Unmanaged.passRetained(exchange)
            defer { context.release() }
            _ = homeport_curl_set_pointer(curl, CURLOPT_WRITEDATA, context.toOpaque())
            _ = homeport_curl_set_write_function(curl, curlSessionWrite)
            _ = homeport_curl_set_pointer(curl, CURLOPT_HEADERDATA, context.toOpaque())
            _ = homeport_curl_set_header_function(curl, curlSessionHeader)
            let code: CURLcode
            if let body {
                code = body.withUnsafeBytes { bytes in
                    _ = homeport_curl_set_long(curl, CURLOPT_POST, 1)
                    _ = homeport_curl_set_long(curl, CURLOPT_POSTFIELDSIZE, bytes.count)
                    _ = homeport_curl_set_pointer(
                        curl, CURLOPT_POSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                    return curl_easy_perform(curl)
                }
                _ = homeport_curl_set_pointer(curl, CURLOPT_POSTFIELDS, nil)
            } else {
                _ = homeport_curl_set_long(curl, CURLOPT_HTTPGET, 1)
                code = curl_easy_perform(curl)
            }
            guard code == CURLE_OK else {
                // The connection may be broken: the next exchange starts afresh.
                curl_easy_cleanup(curl)
                self.curl = nil
                return .failure(Failure(description: String(cString: curl_easy_strerror(code))))
            }
            return .success(Answer(status: homeport_curl_status(curl), body: exchange.body, headers: exchange.headers))
        }
    }

    /// What every exchange of the server's own is: `url` with `headers`, HTTP or HTTPS only, no
    /// redirect, no proxy from the environment, no signal, `timeoutSeconds` in all (at most 10 to
    /// connect), and with `publicOnly` public addresses only.
    static func setUp(
        _ curl: UnsafeMutableRawPointer, url: String, headers: UnsafeMutablePointer<curl_slist>?, timeoutSeconds: Int,
        publicOnly: Bool
    ) {
        _ = homeport_curl_set_string(curl, CURLOPT_URL, url)
        _ = homeport_curl_set_slist(curl, CURLOPT_HTTPHEADER, headers)
        _ = homeport_curl_set_long(curl, CURLOPT_TIMEOUT, timeoutSeconds)
        _ = homeport_curl_set_long(curl, CURLOPT_CONNECTTIMEOUT, min(10, timeoutSeconds))
        _ = homeport_curl_set_long(curl, CURLOPT_NOSIGNAL, 1)
        _ = homeport_curl_set_long(curl, CURLOPT_FOLLOWLOCATION, 0)
        _ = homeport_curl_set_string(curl, CURLOPT_PROXY, "")
        _ = homeport_curl_set_long(curl, CURLOPT_PROTOCOLS, Int(CURLPROTO_HTTP | CURLPROTO_HTTPS))
        _ = homeport_curl_public_only(curl, publicOnly ? 1 : 0)
    }

    /// The answer's body, as it arrives, up to its limit.
    final class Exchange {
        var body = Data()
        var headers: [String: String] = [:]
        let limit: Int

        init(limit: Int) {
            self.limit = limit
        }
    }
}

let curlSessionWrite: curl_write_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let exchange = Unmanaged<CurlSession.Exchange>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    guard exchange.body.count + length <= exchange.limit else { return 0 }
    exchange.body.append(UnsafeRawBufferPointer(start: data, count: length).bindMemory(to: UInt8.self))
    return length
}

/// One header line of the answer: a status line starts the fields afresh (an interim `100`, or
/// the answer after it), so only the final answer's are kept.
let curlSessionHeader: curl_write_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let exchange = Unmanaged<CurlSession.Exchange>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    // Read as bytes: every answer passes here, many times a push.
    let line = UnsafeRawBufferPointer(start: data, count: length)
    if line.starts(with: "HTTP/".utf8) {
        exchange.headers = [:]
    } else if let colon = line.firstIndex(of: UInt8(ascii: ":")), exchange.headers.count < 100 {
        let name = String(decoding: curlHeaderTrimmed(line[..<colon]), as: UTF8.self).lowercased()
        exchange.headers[name] = String(decoding: curlHeaderTrimmed(line[(colon + 1)...]), as: UTF8.self)
    }
    return length
}

/// A header's name or value without the spaces, tabs and line ends around it.
private func curlHeaderTrimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
    let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
    guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) })
    else { return bytes[bytes.startIndex..<bytes.startIndex] }
    return bytes[first...last]
}
