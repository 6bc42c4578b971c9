import Foundation

extension HTTPRequest {
    /// The cookies of the `Cookie` header(s); a name sent twice keeps its first value.
    ///
    /// Split on the bytes `;` and `=`, never on characters: a character that combines with its
    /// neighbour (an accent after `;`, U+0600 before it) would otherwise hide the separator, and
    /// with it every cookie after it, the session's included.
    package var cookies: [String: String] {
        var result: [String: String] = [:]
        for header in headers.values("Cookie") {
            for pair in Array(header.utf8).split(separator: UInt8(ascii: ";")) {
                let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1)
                guard parts.count == 2 else { continue }
                let name = String(decoding: parts[0], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                if result[name] == nil {
                    result[name] = String(decoding: parts[1], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return result
    }

    /// The fields of an `application/x-www-form-urlencoded` body (the last value of a repeated name wins).
    package var formFields: [String: String] {
        Self.parseURLEncoded(String(decoding: body, as: UTF8.self))
    }

    /// Parses `a=1&b=two+words&c=%2F`, splitting on the bytes `&` and `=` (as the URL standard's
    /// parser does), so that no character can hide a separator by combining with it.
    package static func parseURLEncoded(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in Array(text.utf8).split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { continue }
            result[name] = parts.count > 1 ? decode(parts[1]) ?? "" : ""
        }
        return result
    }

    /// `+` (the byte) as a space, then `%HH` escapes; `nil` when an escape is malformed.
    private static func decode(_ bytes: ArraySlice<UInt8>) -> String? {
        String(decoding: bytes.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
            .removingPercentEncoding
    }
}

extension HTTPResponse {
    /// An HTML page, not cached, not framed, with scripts and outside resources refused. The
    /// referrer goes to this origin only: with none at all, browsers send a same-origin form's
    /// `Origin` as `null`, and the CSRF check must refuse that.
    package static func html(_ page: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: [
                "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
                "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
                "Referrer-Policy": "same-origin",
            ],
            body: Data(page.utf8))
    }

    /// A `303 See Other` to `location`.
    package static func seeOther(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: ["Location": location, "Cache-Control": "no-store"])
    }
}

/// Escapes text for HTML element content and attribute values.
package func htmlEscaped(_ text: String) -> String {
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
