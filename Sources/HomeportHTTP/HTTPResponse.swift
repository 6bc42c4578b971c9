import Foundation
import HomeportWire

/// A complete response: status, header fields and body.
public struct HTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// The header fields (`Content-Length` is added by the server).
    public var headers: HTTPHeaders
    /// The body bytes.
    public var body: Data
    /// A body written over time instead of ``body`` (server-sent events); `nil` for most answers.
    package var stream: HTTPBodyStream?
    /// The preparation this answer came from (``PreparedResponse/response``), if any.
    var prepared: PreparedResponse?

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response whose body `stream` writes over time, sent as it comes (chunked).
    package static func streaming(_ stream: HTTPBodyStream, status: Int = 200, headers: HTTPHeaders) -> HTTPResponse {
        var response = HTTPResponse(status: status, headers: headers)
        response.stream = stream
        return response
    }

    /// A JSON response from bytes that are already encoded.
    public static func json(bytes: Data, status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: ["Content-Type": "application/json", "X-Content-Type-Options": "nosniff"],
            body: bytes)
    }

    /// `value` as every answer writes JSON: keys sorted, slashes as they are (the bytes of
    /// Foundation's `JSONEncoder` with `.sortedKeys` and `.withoutEscapingSlashes`, written
    /// several times faster). Throws for a number JSON cannot hold.
    public static func encode<T: Encodable>(_ value: T) throws -> Data {
        try JSONWriter().encode(value)
    }

    /// An untyped value (what `JSONSerialization` reads, or a literal of dictionaries, arrays,
    /// strings, numbers, `Bool` and `NSNull`) written as ``encode(_:)`` writes a typed one.
    /// Throws for what is not JSON.
    package static func encode(untyped value: Any) throws -> Data {
        try JSONWriter().encode(untyped: value)
    }

    /// A JSON response encoding `value` with ``encode(_:)``.
    public static func json<T: Encodable>(_ value: T, status: Int = 200) throws -> HTTPResponse {
        .json(bytes: try encode(value), status: status)
    }

    /// The Homeport JSON error shape `{"error": {"code", "message", "field"?}}`.
    public static func error(status: Int, code: String, message: String, field: String? = nil) -> HTTPResponse {
        let envelope = ErrorEnvelope(code: code, message: message, field: field)
        // Encoding two strings cannot fail; fall back to a fixed body rather than crash.
        let body =
            (try? encode(envelope))
            ?? Data(#"{"error":{"code":"internal_error","message":"error"}}"#.utf8)
        var response = HTTPResponse.json(bytes: body, status: status)
        response.headers.set("Cache-Control", "no-store")
        return response
    }
}
