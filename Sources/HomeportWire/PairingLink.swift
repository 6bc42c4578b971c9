import Foundation

/// A link that introduces an installation to an app out of band, before any contact: its id, its
/// installation key's fingerprint and an address to reach it at —
/// `homeport://pair?s=<instance id>&k=<key fingerprint>&u=<url>`. The server's web account page
/// shows it as a QR code; the app checks the first answer it gets against it, so that even the
/// first contact (and the password it carries) goes only to the installation that holds the key.
public struct PairingLink: Sendable, Equatable, CustomStringConvertible {
    /// The installation's id.
    public var instanceID: InstanceID
    /// Its key's fingerprint (`SHA256:` and base64, as `homeport-server identity show` prints it).
    public var keyFingerprint: String
    /// The address to reach it at: an `http` or `https` URL with a host.
    public var url: String

    /// The scheme and host of every pairing link.
    public static let prefix = "homeport://pair"

    /// A link; throws ``PairingLinkError`` for a fingerprint or URL that cannot be one.
    public init(instanceID: InstanceID, keyFingerprint: String, url: String) throws {
        guard IdentityProof.readFingerprint(keyFingerprint) != nil else {
            throw PairingLinkError("k is not a key fingerprint (SHA256: and 43 characters of base64)")
        }
        guard let parts = URLComponents(string: url), ["http", "https"].contains(parts.scheme?.lowercased() ?? ""),
            let host = parts.host, !host.isEmpty, parts.query == nil, parts.fragment == nil, parts.user == nil
        else { throw PairingLinkError("u is not an http or https address with a host") }
        self.instanceID = instanceID
        self.keyFingerprint = keyFingerprint
        self.url = url
    }

    /// Reads a link. Each of `s`, `k` and `u` must be there exactly once, and nothing else.
    public init(parsing text: String) throws {
        guard text.count <= 2048, let parts = URLComponents(string: text), parts.scheme?.lowercased() == "homeport",
            parts.host?.lowercased() == "pair", parts.path.isEmpty || parts.path == "/", parts.fragment == nil
        else { throw PairingLinkError("it is not a pairing link (\(Self.prefix)?s=…&k=…&u=…)") }
        var values: [String: String] = [:]
        for item in parts.queryItems ?? [] {
            guard ["s", "k", "u"].contains(item.name) else {
                throw PairingLinkError("it has an unknown field '\(item.name)'")
            }
            guard values[item.name] == nil else { throw PairingLinkError("it names \(item.name) twice") }
            values[item.name] = item.value ?? ""
        }
        guard let s = values["s"], let k = values["k"], let u = values["u"] else {
            throw PairingLinkError("it needs s (the installation id), k (its key's fingerprint) and u (its address)")
        }
        guard let id = InstanceID(s) else { throw PairingLinkError("s is not an installation id") }
        try self.init(instanceID: id, keyFingerprint: k, url: u)
    }

    /// The SHA-256 digest the fingerprint shows.
    public var keyDigest: [UInt8] { IdentityProof.readFingerprint(keyFingerprint) ?? [] }

    /// The link as text, its values percent-encoded.
    public var description: String {
        let allowed = CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        func encoded(_ value: String) -> String { value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value }
        return "\(Self.prefix)?s=\(instanceID)&k=\(encoded(keyFingerprint))&u=\(encoded(url))"
    }
}

/// A pairing link that cannot be read.
public struct PairingLinkError: Error, Equatable, CustomStringConvertible {
    /// What is wrong with it.
    public var description: String

    init(_ description: String) {
        self.description = description
    }
}
