import HomeportWire

/// How a request's body is delimited, decided once its headers are in.
///
/// libmicrohttpd takes the first `Content-Length`, lets `Transfer-Encoding` win over it silently,
/// keeps a field name with a space before its colon as another field, and reads a body of an
/// unknown transfer coding until the peer closes. Each of these lets two parsers (a proxy and
/// this server) see two different requests, so each is refused here, with the connection closed
/// (RFC 9112 §6.3): 400 for ambiguous framing, 501 for a transfer coding other than `chunked`.
/// So is an HTTP/1.0 request with `Transfer-Encoding` (RFC 9112 §6.1: its framing is faulty), and
/// a field value holding a CR or an LF (RFC 9110 §5.5), which another parser may take for the end
/// of a line. (libmicrohttpd 0.9.75 cuts a value at a NUL before this check sees it; the check
/// refuses one should a later version pass it on.)
enum Framing: Equatable {
    /// No body.
    case none
    /// A body of this many bytes.
    case length(Int)
    /// A chunked body.
    case chunked

    /// The framing `headers` of a request in HTTP/1.1 (or HTTP/1.0, when `http10`) announce, or
    /// the error that refuses them.
    static func of(_ headers: [(name: String, value: String)], http10: Bool) -> Result<Framing, HTTPError> {
        var lengths: [String] = []
        var codings: [String] = []
        var hosts = 0
        for field in headers {
            guard isToken(field.name) else { return .failure(ambiguous("A header field name is not a token.")) }
            guard !hasLineBreakOrNUL(field.value) else {
                return .failure(ambiguous("A header field value holds a CR, an LF or a NUL."))
            }
            if field.name.caseInsensitiveEquals("Content-Length") {
                lengths.append(field.value)
            } else if field.name.caseInsensitiveEquals("Transfer-Encoding") {
                codings.append(field.value)
            } else if field.name.caseInsensitiveEquals("Host") {
                hosts += 1
            }
        }
        if hosts > 1 { return .failure(ambiguous("The request has more than one Host field.")) }
        if !codings.isEmpty {
            guard !http10 else { return .failure(ambiguous("An HTTP/1.0 request cannot be sent chunked.")) }
            guard lengths.isEmpty else {
                return .failure(ambiguous("The request has both Content-Length and Transfer-Encoding."))
            }
            guard codings.count == 1 else { return .failure(ambiguous("The request has Transfer-Encoding twice.")) }
            let coding = codings[0]
            if coding.caseInsensitiveEquals("chunked") { return .success(.chunked) }
            let trimmed = coding.trimmingOWS
            if trimmed.isEmpty || trimmed.caseInsensitiveEquals("chunked") {
                return .failure(ambiguous("Transfer-Encoding must be exactly 'chunked'."))
            }
            return .failure(
                HTTPError(
                    status: 501, code: APIErrorCode.notImplemented,
                    message: "The only transfer coding this server reads is 'chunked'."))
        }
        guard let first = lengths.first else { return .success(.none) }
        guard lengths.allSatisfy({ $0 == first }) else {
            return .failure(ambiguous("The request has two different Content-Length values."))
        }
        // libmicrohttpd has already answered a Content-Length that is not a number.
        return .success(.length(Int(first) ?? 0))
    }

    private static func ambiguous(_ message: String) -> HTTPError {
        HTTPError(status: 400, code: APIErrorCode.badFraming, message: message)
    }

    /// Whether `name` is an RFC 9110 token: at least one of `A-Z a-z 0-9 ! # $ % & ' * + - . ^ _ ` | ~`.
    static func isToken(_ name: String) -> Bool {
        var name = name
        return name.withUTF8 { bytes in !bytes.isEmpty && bytes.allSatisfy { tokenBytes[Int($0)] } }
    }

    /// Whether `value` holds a CR, an LF or a NUL.
    static func hasLineBreakOrNUL(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in bytes.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 } }
    }

    private static let tokenBytes: [Bool] = (0..<256).map { byte in
        let symbols = Array("!#$%&'*+-.^_`|~".utf8)
        return (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(UInt8(byte))
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(UInt8(byte))
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(UInt8(byte)) || symbols.contains(UInt8(byte))
    }
}

extension String {
    /// Without leading and trailing spaces and tabs (RFC 9110's optional whitespace).
    var trimmingOWS: Substring {
        let isOWS: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isOWS($0) }), let end = lastIndex(where: { !isOWS($0) }) else {
            return ""
        }
        return self[start...end]
    }
}

extension Substring {
    func caseInsensitiveEquals(_ other: String) -> Bool { String(self).caseInsensitiveEquals(other) }
}
