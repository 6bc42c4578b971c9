import Foundation

/// An HTTP status code, by name: `.created` rather than `201`. An integer literal is one too.
public struct HTTPStatus: RawRepresentable, Hashable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The code (`201`).
    public let rawValue: Int

    /// The status with `code`.
    public init(rawValue code: Int) {
        rawValue = code
    }

    /// The status with `code`.
    public init(integerLiteral code: Int) {
        rawValue = code
    }

    /// The code, as digits.
    public var description: String { String(rawValue) }

    /// `200 OK`
    public static let ok: HTTPStatus = 200
    /// `201 Created`: the answer names what was made.
    public static let created: HTTPStatus = 201
    /// `202 Accepted`: begun, not done.
    public static let accepted: HTTPStatus = 202
    /// `204 No Content`: done, with nothing to say.
    public static let noContent: HTTPStatus = 204
    /// `400 Bad Request`
    public static let badRequest: HTTPStatus = 400
    /// `401 Unauthorized`: no session, or not a live one.
    public static let unauthorized: HTTPStatus = 401
    /// `403 Forbidden`
    public static let forbidden: HTTPStatus = 403
    /// `404 Not Found`
    public static let notFound: HTTPStatus = 404
    /// `409 Conflict`
    public static let conflict: HTTPStatus = 409
    /// `410 Gone`
    public static let gone: HTTPStatus = 410
    /// `422 Unprocessable Content`
    public static let unprocessableContent: HTTPStatus = 422
    /// `429 Too Many Requests`
    public static let tooManyRequests: HTTPStatus = 429
    /// `500 Internal Server Error`
    public static let internalServerError: HTTPStatus = 500
    /// `503 Service Unavailable`
    public static let serviceUnavailable: HTTPStatus = 503
}

extension HTTPResponse {
    /// A response with `status` by name.
    public init(status: HTTPStatus, headers: HTTPHeaders = [:], body: Data = Data()) {
        self.init(status: status.rawValue, headers: headers, body: body)
    }

    /// A JSON response encoding `value` with ``encode(_:)``, with `status` by name.
    public static func json<T: Encodable>(_ value: T, status: HTTPStatus) throws -> HTTPResponse {
        try .json(value, status: status.rawValue)
    }
}

extension HTTPError {
    /// An error answer with `status` by name, `code` and `message` in the JSON error shape.
    public init(
        status: HTTPStatus, code: String, message: String, headers: [String: String] = [:], field: String? = nil
    ) {
        self.init(status: status.rawValue, code: code, message: message, headers: headers, field: field)
    }
}
