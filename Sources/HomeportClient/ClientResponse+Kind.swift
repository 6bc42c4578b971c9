import Foundation
import HomeportWire

extension ClientResponse {
    /// Whether the answer is a web page rather than JSON: a `text/html` or `application/xhtml+xml`
    /// content type in any case, or a body that starts with markup (`<!doctype html>`, `<html>`,
    /// `<?xml …>`) after a byte-order mark and blanks, whatever the content type says.
    public var isHTML: Bool {
        if let type = headers["content-type"]?.lowercased(), type.contains("text/html") || type.contains("xhtml") {
            return true
        }
        return bodyStart.first == UInt8(ascii: "<")
    }

    /// Whether the content type is JSON's (`application/json`, parameters allowed), and only that.
    public var isJSON: Bool {
        guard let type = headers["content-type"] else { return false }
        let media = type.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        return media.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
    }

    /// Whether this is the API's own refusal of the session token — the only answer that may sign
    /// an account out. On the app door (`/_allauth/app/v1/…`): its JSON envelope with status 410
    /// (the token is invalid), or 401 with `meta.is_authenticated` not true (a 401 that asks to
    /// reauthenticate keeps the session). Elsewhere (the API prefix): a 401 in Homeport's JSON
    /// error shape with the code `not_authenticated`. An HTML page, a proxy's `401 text/plain`, any
    /// other JSON: not the API, so the session stays.
    func refusesSession(onAppDoor: Bool) -> Bool {
        guard status == 401 || status == 410, isJSON, !isHTML else { return false }
        if onAppDoor {
            guard let envelope = try? JSONDecoder().decode(AuthEnvelope.self, from: body), envelope.status == status
            else { return false }
            return status == 410 || envelope.meta?.isAuthenticated != true
        }
        guard status == 401, let envelope = try? JSONDecoder().decode(ErrorEnvelope.self, from: body) else {
            return false
        }
        return envelope.error.code == APIErrorCode.notAuthenticated
    }

    /// Whether this is the app door's 401 that keeps the session but asks the person to
    /// reauthenticate (`meta.is_authenticated` true).
    var asksToReauthenticate: Bool {
        guard status == 401, isJSON, !isHTML,
            let envelope = try? JSONDecoder().decode(AuthEnvelope.self, from: body), envelope.status == status
        else { return false }
        return envelope.meta?.isAuthenticated == true
    }

    /// Whether this is the app door's answer to a logout: its JSON envelope, 401 (signed out now)
    /// or 410 (the token was already dead), or 200.
    var confirmsLogout: Bool {
        guard [200, 401, 410].contains(status), isJSON, !isHTML,
            let envelope = try? JSONDecoder().decode(AuthEnvelope.self, from: body)
        else { return false }
        return envelope.status == status
    }

    /// What kind of answer this is, in a few words, for a message.
    var kind: String {
        if isHTML { return "an HTML page" }
        let type = headers["content-type"].map { ServerText.clean($0) } ?? "no content type"
        return "\(status) (\(type))"
    }

    /// The first bytes of the body after byte-order marks (UTF-8, UTF-16) and blanks.
    private var bodyStart: Data.SubSequence {
        var start = body.prefix(256)
        while true {
            if start.starts(with: [0xEF, 0xBB, 0xBF]) {
                start = start.dropFirst(3)
            } else if start.starts(with: [0xFF, 0xFE]) || start.starts(with: [0xFE, 0xFF]) {
                start = start.dropFirst(2)
            } else if let first = start.first, [0x20, 0x09, 0x0A, 0x0D, 0x00].contains(first) {
                start = start.dropFirst()
            } else {
                return start
            }
        }
    }
}
