import CCurl
import Foundation

/// What one transfer's answer comes to, as libcurl hands it over: the head (status and header
/// fields), the body, and whether the request went out. By default the body is kept, up to
/// ``limit`` bytes; a subclass may take it its own way (a stream) and ask to stop.
open class CurlExchange {
    /// The easy handle of the transfer, for its status.
    var handle: UnsafeMutableRawPointer?
    /// The body's size limit, in bytes; beyond it the transfer stops (``tooLarge``).
    public let limit: Int
    /// The body as it arrived (with ``received(_:)`` not overridden).
    public var body = Data()
    /// The body passed ``limit``.
    public var tooLarge = false
    /// Header fields of the latest response head (an interim `100`'s are dropped when the next
    /// head starts), names lowercase. A field sent twice keeps both values, joined by `, `, so
    /// the second cannot hide behind the first. At most ``fieldLimit`` names are kept.
    public var headers: [String: String] = [:]
    /// The status of the latest response head, once it ended.
    public var status = 0
    /// Whether libcurl connected and was about to send the request.
    public var requestSent = false

    /// The most header names an answer keeps.
    public static let fieldLimit = 100

    /// An exchange keeping at most `limit` bytes of body.
    public init(limit: Int) {
        self.limit = limit
    }

    /// A final response head (not 1xx) ended.
    open func headEnded() {}

    /// A chunk of the body; false stops the transfer. By default it is kept, up to ``limit``.
    open func received(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard body.count + bytes.count <= limit else {
            tooLarge = true
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    /// Whether to stop now (asked about once a second when the handle was attached as
    /// abortable, even when nothing arrives).
    open var shouldAbort: Bool { false }

    /// Takes one line of a response head as libcurl gives it (ending in CRLF): a status line
    /// starts the fields afresh, the blank line ends the head. Read as bytes: every answer of
    /// every push passes here.
    public func take(headerLine line: UnsafeRawBufferPointer) {
        if line.starts(with: "HTTP/".utf8) {
            headers = [:]
        } else if trimmed(line[...]).isEmpty {
            if let handle { status = homeport_curl_status(handle) }
            if status >= 200 { headEnded() }
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let name = String(decoding: trimmed(line[..<colon]), as: UTF8.self).lowercased()
            let value = String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)
            if let earlier = headers[name] {
                headers[name] = earlier + ", " + value
            } else if headers.count < Self.fieldLimit {
                headers[name] = value
            }
        }
    }

    /// A name or value without the spaces, tabs and line ends around it.
    private func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        guard let first = bytes.firstIndex(where: { !blank($0) }), let last = bytes.lastIndex(where: { !blank($0) })
        else { return bytes[bytes.startIndex..<bytes.startIndex] }
        return bytes[first...last]
    }

    // MARK: libcurl's callbacks, each reaching the exchange through its context pointer

    static let writeCallback: curl_write_callback = { data, size, count, context in
        guard let data, let context else { return 0 }
        let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        return exchange.received(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
    }

    /// One header line; every byte is taken.
    public static let headerCallback: curl_write_callback = { data, size, count, context in
        guard let data, let context else { return 0 }
        let exchange = Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        exchange.take(headerLine: UnsafeRawBufferPointer(start: data, count: length))
        return length
    }

    static let prereqCallback:
        @convention(c) (
            UnsafeMutableRawPointer?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int32, Int32
        ) -> Int32 = { context, _, _, _, _ in
            if let context { Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().requestSent = true }
            return CURL_PREREQFUNC_OK
        }

    static let progressCallback: curl_xferinfo_callback = { context, _, _, _, _ in
        guard let context else { return 0 }
        return Unmanaged<CurlExchange>.fromOpaque(context).takeUnretainedValue().shouldAbort ? 1 : 0
    }
}
