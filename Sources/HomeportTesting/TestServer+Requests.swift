import CCurl
import Foundation
import HomeportCurl
import HomeportServer

/// An answer the ``TestServer`` gave.
public struct TestResponse: Sendable {
    /// Its status.
    public var status: Int
    /// Its header fields, names lowercase (a field sent twice has both values, joined by `, `).
    public var headers: [String: String]
    /// Its body.
    public var body: Data

    /// The body as text.
    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body decoded as `type` (JSON).
    public func json<T: Decodable>(_ type: T.Type = T.self) throws -> T {
        try JSONDecoder().decode(type, from: body)
    }

    /// The body as a JSON object, or `nil` when it is not one.
    public var object: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: body)) as? [String: Any]
    }

    /// The error code of an error answer (`{"error":{"code":…}}`), if it is one.
    public var errorCode: String? {
        (object?["error"] as? [String: Any])?["code"] as? String
    }
}

extension TestServer {
    /// Sends `method path` (the path with its query: `/api/v1/books?limit=2`) with `body`, as
    /// `account` when one is given (its token in `X-Session-Token`), and the header lines
    /// `headers` (a name given twice is sent twice).
    public func request(
        _ method: HTTPMethod, _ path: String, as account: TestAccount? = nil, body: Data? = nil,
        headers: [(String, String)] = []
    ) throws -> TestResponse {
        guard let easy = CurlEasy() else { throw TestServerError("libcurl failed") }
        var lines = headers.map { "\($0.0): \($0.1)" } + ["Expect:"]
        if let account { lines.append("X-Session-Token: \(account.token)") }
        let list = CurlHeaderList(lines)
        easy.useHTTP(url: baseURL + path, headers: list)
        easy.limit(seconds: 30)
        easy.set(CURLOPT_CUSTOMREQUEST, method.rawValue)
        if method == .head { easy.set(CURLOPT_NOBODY, 1) }
        if let body { easy.post(body) }
        let exchange = CurlExchange(limit: 64 << 20)
        easy.attach(exchange)
        let code = withExtendedLifetime(list) { easy.perform() }
        guard code == CURLE_OK else {
            throw TestServerError("\(method.rawValue) \(path): \(CurlLibrary.describe(code))")
        }
        return TestResponse(status: easy.status, headers: exchange.headers, body: exchange.body)
    }

    /// `GET path`.
    public func get(_ path: String, as account: TestAccount? = nil) throws -> TestResponse {
        try request(.get, path, as: account)
    }

    /// `DELETE path`.
    public func delete(_ path: String, as account: TestAccount? = nil) throws -> TestResponse {
        try request(.delete, path, as: account)
    }

    /// `POST path` with `json` encoded as the body (none: an empty body).
    public func post(_ path: String, json: (any Encodable)? = nil, as account: TestAccount? = nil) throws
        -> TestResponse
    {
        try send(.post, path, json: json, as: account)
    }

    /// `PUT path` with `json` encoded as the body.
    public func put(_ path: String, json: any Encodable, as account: TestAccount? = nil) throws -> TestResponse {
        try send(.put, path, json: json, as: account)
    }

    /// `PATCH path` with `json` encoded as the body.
    public func patch(_ path: String, json: any Encodable, as account: TestAccount? = nil) throws -> TestResponse {
        try send(.patch, path, json: json, as: account)
    }

    private func send(_ method: HTTPMethod, _ path: String, json: (any Encodable)?, as account: TestAccount?) throws
        -> TestResponse
    {
        guard let json else { return try request(method, path, as: account, body: Data()) }
        return try request(
            method, path, as: account, body: try JSONEncoder().encode(json),
            headers: [("Content-Type", "application/json")])
    }
}
