import Foundation

/// A browser: keeps cookies per name, sends forms with the CSRF token of the last page it got,
/// and says where the forms come from (`Origin`) as browsers do.
public final class Browser {
    /// The server's port on 127.0.0.1.
    public let port: Int
    /// The cookies it holds, by name.
    public var cookies: [String: String] = [:]
    /// The `csrf_token` field of the last page that had one.
    public var formToken: String?
    /// The `Origin` sent with posts; `nil` sends none.
    public var origin: String?

    /// A browser without cookies for the server on `port`.
    public init(port: Int) {
        self.port = port
        origin = "http://127.0.0.1:\(port)"
    }

    /// `GET path`, with its cookies (and `headers`).
    public func get(_ path: String, headers: [(String, String)] = []) throws -> RawResponse {
        remember(try RawHTTP.request(port: port, path: path, headers: cookieHeader() + headers))
    }

    /// Posts a form, with the last page's CSRF token unless `csrf` or a `csrf_token` field says otherwise.
    public func post(_ path: String, _ fields: [String: String], csrf: String? = nil) throws -> RawResponse {
        var fields = fields
        if fields["csrf_token"] == nil { fields["csrf_token"] = csrf ?? formToken ?? "" }
        let body = fields.map {
            "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
        }
        .joined(separator: "&")
        return remember(
            try RawHTTP.request(
                port: port, method: "POST", path: path,
                headers: cookieHeader() + (origin.map { [("Origin", $0)] } ?? [])
                    + [("Content-Type", "application/x-www-form-urlencoded")], body: Data(body.utf8)))
    }

    private func cookieHeader() -> [(String, String)] {
        cookies.isEmpty ? [] : [("Cookie", cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))]
    }

    private func remember(_ response: RawResponse) -> RawResponse {
        if let range = response.text.range(of: #"name="csrf_token" value=""#) {
            formToken = String(response.text[range.upperBound...].prefix { $0 != "\"" })
        }
        for header in response.headers where header.name.lowercased() == "set-cookie" {
            let pair = header.value.prefix { $0 != ";" }.split(separator: "=", maxSplits: 1)
            guard pair.count >= 1 else { continue }
            let value = pair.count == 2 ? String(pair[1]) : ""
            if value.isEmpty { cookies[String(pair[0])] = nil } else { cookies[String(pair[0])] = value }
        }
        return response
    }
}
