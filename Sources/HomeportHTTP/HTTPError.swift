import HomeportWire

/// An error a handler throws to answer with a specific status and the JSON error shape.
public struct HTTPError: Error, Sendable, Equatable {
    /// The status code (4xx or 5xx).
    public var status: Int
    /// A stable snake_case code.
    public var code: String
    /// A sentence for people; never contains a secret.
    public var message: String
    /// Extra header fields, such as `Allow` or `Retry-After`.
    public var headers: [String: String]
    /// The request field the error is about, when it is about one.
    public var field: String?

    /// Creates an error.
    public init(status: Int, code: String, message: String, headers: [String: String] = [:], field: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.field = field
    }

    /// The response this error answers with.
    public var response: HTTPResponse {
        var response = HTTPResponse.error(status: status, code: code, message: message, field: field)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            response.headers.set(name, value)
        }
        return response
    }

    /// 400 `invalid_field` naming the field that is missing or wrong.
    public static func invalidField(_ field: String, _ message: String) -> HTTPError {
        HTTPError(status: 400, code: APIErrorCode.invalidField, message: message, field: field)
    }

    /// 400 with a specific code.
    public static func badRequest(code: String = APIErrorCode.badRequest, message: String) -> HTTPError {
        HTTPError(status: 400, code: code, message: message)
    }

    /// 404 for a path no route serves.
    public static func notFound(path: String) -> HTTPError {
        HTTPError(status: 404, code: APIErrorCode.notFound, message: "No route serves this path.")
    }

    /// 405 listing the methods the path accepts.
    public static func methodNotAllowed(_ method: HTTPMethod, allowed: [HTTPMethod]) -> HTTPError {
        let list = allowed.map(\.rawValue).joined(separator: ", ")
        return HTTPError(
            status: 405, code: APIErrorCode.methodNotAllowed,
            message: "\(method.rawValue.prefix(16)) is not allowed here; use \(list).",
            headers: ["Allow": list])
    }

    /// 413 for a body over the limit.
    public static func payloadTooLarge(limit: Int) -> HTTPError {
        HTTPError(
            status: 413, code: APIErrorCode.payloadTooLarge,
            message: "The request body is larger than the \(limit)-byte limit.")
    }

    /// 503 when a dependency (such as the database) cannot answer, or the server is too busy;
    /// `Retry-After` says when to try again.
    public static func unavailable(code: String, message: String, retryAfter seconds: Int = 5) -> HTTPError {
        HTTPError(status: 503, code: code, message: message, headers: ["Retry-After": String(seconds)])
    }

    /// 500 without detail; the detail goes to the log, never to the client.
    public static let internalError = HTTPError(
        status: 500, code: APIErrorCode.internalError, message: "The server failed to answer this request.")
}
