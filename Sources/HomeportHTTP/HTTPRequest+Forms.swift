import Foundation

extension HTTPRequest {
    /// The cookies of the `Cookie` header(s); a name sent twice keeps its first value.
    public var cookies: [String: String] {
        var result: [String: String] = [:]
        for header in headers.values("Cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let name = parts[0].trimmingCharacters(in: .whitespaces)
                if result[name] == nil { result[name] = parts[1].trimmingCharacters(in: .whitespaces) }
            }
        }
        return result
    }

    /// The fields of an `application/x-www-form-urlencoded` body (the last value of a repeated name wins).
    public var formFields: [String: String] {
        Self.parseURLEncoded(String(decoding: body, as: UTF8.self))
    }

    /// Parses `a=1&b=two+words&c=%2F`.
    public static func parseURLEncoded(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { continue }
            result[name] = parts.count > 1 ? decode(parts[1]) ?? "" : ""
        }
        return result
    }

    private static func decode(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}

extension HTTPResponse {
    /// An HTML page, not cached, not framed, with scripts and outside resources refused.
    public static func html(_ page: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: [
                "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
                "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
                "Referrer-Policy": "no-referrer",
            ],
            body: Data(page.utf8))
    }

    /// A `303 See Other` to `location`.
    public static func seeOther(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: ["Location": location, "Cache-Control": "no-store"])
    }
}

/// Escapes text for HTML element content and attribute values.
public func htmlEscaped(_ text: String) -> String {
    var result = ""
    result.reserveCapacity(text.count)
    for character in text {
        switch character {
        case "&": result += "&amp;"
        case "<": result += "&lt;"
        case ">": result += "&gt;"
        case "\"": result += "&quot;"
        case "'": result += "&#39;"
        default: result.append(character)
        }
    }
    return result
}
