import Foundation
import HomeportWire

/// One complete request as a handler sees it: headers and the whole body already read.
public struct HTTPRequest: Sendable {
    /// The request method.
    public var method: HTTPMethod
    /// The decoded path, without the query string.
    public var path: String
    /// Query arguments (the last value wins when a name repeats).
    public var query: [String: String]
    /// The request header fields.
    public var headers: HTTPHeaders
    /// The request body (empty when there is none).
    public var body: Data
    /// The client's IP address as text (`127.0.0.1`, `::1`): the peer's, or the client a trusted
    /// proxy named for it (`--trusted-proxies`); `"unix"` on the Unix-domain socket with no proxy
    /// header; `"unknown"` when neither is known.
    public var remoteAddress: String
    /// Values of `:name` segments of the route that matched.
    public var pathParameters: [String: String]

    /// Creates a request; servers build these, tests may too.
    public init(
        method: HTTPMethod, path: String, query: [String: String] = [:], headers: HTTPHeaders = [:],
        body: Data = Data(), remoteAddress: String = "unknown", pathParameters: [String: String] = [:]
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.pathParameters = pathParameters
    }

    /// Decodes the body as JSON, or throws a 400 ``HTTPError`` that says what is wrong. A body
    /// that names a key twice in an object is refused (`StrictJSON`): parsers disagree about
    /// which of the two counts.
    public func decodeJSON<T: Decodable>(_ type: T.Type) throws -> T {
        guard !body.isEmpty else {
            throw HTTPError.badRequest(code: "body_required", message: "This request needs a JSON body.")
        }
        guard StrictJSON.isValidWithoutRepeatedKeys(Array(body)) else {
            throw HTTPError.badRequest(
                code: "invalid_json", message: "The request body is not valid JSON, or names a key twice in an object.")
        }
        do {
            return try JSONDecoder().decode(type, from: body)
        } catch {
            throw HTTPError.badRequest(
                code: "invalid_json", message: "The request body is not valid JSON for this route.")
        }
    }
}
