import Foundation
import HomeportClient
import HomeportWire

/// Sends the checks' requests to the server under test, each under a total deadline and a byte
/// limit, with no cookie, cache or credential but those a check adds. A server that stops
/// answering costs a few deadlines, not one per check: after ``silenceLimit`` requests in a row got
/// no answer, the rest are not sent.
final class ConformanceHTTP {
    /// The base URL, without a trailing slash.
    let base: String
    /// The library's transport (libcurl on Linux): TLS always verified.
    let transport: any ClientTransport
    /// A transport that sends an empty header field as it is (libcurl drops one), when there is one.
    let emptyHeaderTransport: (any ClientTransport)?
    /// Each request's total deadline.
    let deadline: Duration
    /// Largest answer read.
    static let byteLimit = 1 << 20
    /// Requests in a row without an answer after which nothing more is sent.
    static let silenceLimit = 3
    private var silences = 0

    init(
        base: String, transport: any ClientTransport, emptyHeaderTransport: (any ClientTransport)?,
        deadline: Duration
    ) {
        self.base = base
        self.transport = transport
        self.emptyHeaderTransport = emptyHeaderTransport
        self.deadline = deadline
    }

    /// `scheme://host[:port]` of the base URL, as a browser sends it in `Origin`.
    var origin: String {
        guard let components = URLComponents(string: base), let scheme = components.scheme else { return base }
        let host = components.percentEncodedHost ?? ""
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(shownHost)" + (components.port.map { ":\($0)" } ?? "")
    }

    /// `GET path`.
    func get(_ path: String, headers: [String: String] = [:]) async throws -> ConformanceAnswer {
        try await send("GET", path, headers: headers)
    }

    /// `GET path` with `X-Session-Token: token`.
    func get(_ path: String, token: String) async throws -> ConformanceAnswer {
        try await send("GET", path, headers: [HomeportHeader.sessionToken: token])
    }

    /// `POST path` with a JSON body (the app door's form).
    func post(_ path: String, json fields: [String: String], headers: [String: String] = [:]) async throws
        -> ConformanceAnswer
    {
        let body = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        return try await send(
            "POST", path, headers: headers.merging(["Content-Type": "application/json"]) { $1 }, body: body)
    }

    /// Opens a streamed answer (`GET path`, the in-app stream): its status and fields at once,
    /// its body as it comes. A failure is a ``ProbeFailure``.
    func open(_ path: String, headers: [String: String]) async throws -> ClientStream {
        guard let url = URL(string: base + path) else { throw ProbeFailure("\(base + path) is not a URL") }
        let request = ClientRequest(
            method: "GET", url: url, headers: headers.merging(["Accept": "text/event-stream"]) { $1 },
            byteLimit: Self.byteLimit, deadline: deadline)
        do {
            return try await transport.open(request)
        } catch {
            throw ProbeFailure("GET \(path): \(error)", unanswered: true)
        }
    }

    /// Sends one request; a failure is a ``ProbeFailure`` that says what happened and whether it had been sent.
    func send(
        _ method: String, _ path: String, headers: [String: String] = [:], body: Data? = nil,
        keepingEmptyHeaders: Bool = false
    ) async throws -> ConformanceAnswer {
        guard silences < Self.silenceLimit else {
            throw ProbeFailure(
                "\(method) \(path) not sent: the server did not answer the last \(Self.silenceLimit) requests")
        }
        guard let url = URL(string: base + path) else { throw ProbeFailure("\(base + path) is not a URL") }
        let transport = keepingEmptyHeaders ? (emptyHeaderTransport ?? transport) : transport
        let request = ClientRequest(
            method: method, url: url, headers: headers, body: body, byteLimit: Self.byteLimit, deadline: deadline)
        do {
            let answer = ConformanceAnswer(try await transport.send(request))
            silences = 0
            return answer
        } catch let error as ClientError {
            switch error {
            case .unreachable(_, let reason):
                silences += 1
                let hint = reason.contains("TLS") ? " (a private CA: --ca-file PATH)" : ""
                throw ProbeFailure("\(method) \(path): \(reason)\(hint)", unanswered: true)
            case .tooLarge(_, let limit):
                silences = 0
                throw ProbeFailure("\(method) \(path): the answer is over \(limit) bytes")
            default:
                throw ProbeFailure("\(method) \(path): \(error.description)")
            }
        } catch {
            throw ProbeFailure("\(method) \(path): \(error)")
        }
    }
}

/// What the conformance checks share.
enum Conformance {
    /// A random token shaped like Homeport's (43 base64url characters): nobody's session.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A random session key shaped like Django's (32 lowercase letters and digits): nobody's session.
    static func randomSessionKey() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        var generator = SystemRandomNumberGenerator()
        return String((0..<32).map { _ in alphabet.randomElement(using: &generator)! })
    }

    /// The session cookies a server may read, all set to `value`.
    static func sessionCookies(_ value: String) -> String {
        ["sessionid", "homeport_session", "__Host-homeport_session"].map { "\($0)=\(value)" }
            .joined(separator: "; ")
    }

    /// `fields` as an HTML form body (`application/x-www-form-urlencoded`).
    static func formBody(_ fields: [(String, String)]) -> Data {
        let allowed = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let encode = { (text: String) in text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return Data(fields.map { encode($0.0) + "=" + encode($0.1) }.joined(separator: "&").utf8)
    }
}
