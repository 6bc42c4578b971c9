import Foundation
import HomeportCrypto
import HomeportStorage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The key that seals what the database must hold but must not give away: TOTP secrets, and
/// recovery codes until they are shown. It lives in a file beside the database (or wherever
/// `--secrets-key-file` says), so a copy of the database alone opens nothing.
///
/// The file holds at least 32 bytes (`openssl rand -hex 32` writes 64); the key is derived from
/// them, so their form does not matter. A database remembers a check of the key it was first
/// given, and a server given another key refuses to start rather than lock every second factor out.
package struct SecretsKey: Sendable, Hashable {
    let bytes: [UInt8]

    /// A key from these file contents; `nil` if they are shorter than 32 bytes (trailing white
    /// space aside).
    package init?(fileContents: [UInt8]) {
        var contents = fileContents
        while let last = contents.last, last == 0x0A || last == 0x0D || last == 0x20 { contents.removeLast() }
        guard contents.count >= 32 else { return nil }
        bytes = Digest.hmacSHA256(key: contents, Array("homeport-secrets-key".utf8))
    }

    /// A key that lives as long as the process (an in-memory database, which lives as long).
    static func ephemeral(random: any RandomSource = SystemRandom()) throws -> SecretsKey {
        guard let key = SecretsKey(fileContents: try random.bytes(32)) else { throw CryptoError.randomUnavailable }
        return key
    }

    /// Reads the key file at `path`. With `create`, a missing file is made first (32 random
    /// bytes in hex, mode 0600, never replaced). It is written whole under another name and then
    /// linked into place, which fails if the file appeared meanwhile: two processes starting at
    /// once on one database (replicas of a SQLite file) both read the one key, never a file still
    /// being written. A file others may read is refused, as ssh refuses a private key others may
    /// read.
    package static func load(path: String, create: Bool) throws -> SecretsKey {
        let data = try PrivateFile.read(
            path, what: "secrets key file",
            create: create ? { Digest.hex(try SystemRandom().bytes(32)) + "\n" } : nil)
        guard let key = SecretsKey(fileContents: Array(data)) else {
            throw ConfigurationError(
                "the secrets key file \(path) holds fewer than 32 bytes; write one with: openssl rand -hex 32 > \(path)"
            )
        }
        return key
    }

    /// Seals `plaintext` for one place (`context`, such as `totp:42`): it opens only there.
    func seal(_ plaintext: String, context: String) throws -> String {
        Data(try AESGCM.seal(Array(plaintext.utf8), key: bytes, associatedData: Array(context.utf8)))
            .base64EncodedString()
    }

    /// Opens what ``seal(_:context:)`` sealed for `context`; `nil` if it is damaged, sealed for
    /// elsewhere, or sealed with another key.
    func unseal(_ sealed: String, context: String) -> String? {
        guard let box = Data(base64Encoded: sealed),
            let plain = try? AESGCM.open(Array(box), key: bytes, associatedData: Array(context.utf8))
        else { return nil }
        return String(bytes: plain, encoding: .utf8)
    }

    /// A recovery code's stored form: keyed, so that a copy of the database cannot try the
    /// hundred million eight-digit codes against it.
    func recoveryCodeHash(_ code: String, userID: Int64) -> String {
        Digest.hex(Digest.hmacSHA256(key: bytes, Array("recovery-code:\(userID):\(code)".utf8)))
    }

    /// What the database remembers of the key (not the key: an HMAC under it).
    var check: String {
        Digest.hex(Digest.hmacSHA256(key: bytes, Array("homeport-secrets-key-check".utf8)))
    }

    /// The name of the check's row in `server_secrets`.
    static let checkName = "secrets-key-check"

    /// What the database holds sealed with its secrets key, as a sentence's subject (`nil` when
    /// nothing): another key would open none of it.
    static func sealed(in db: any SQLExecutor) throws -> String? {
        if try AuthenticatorStore(db).any() { return "accounts on this database sign in with a second factor" }
        let keys = try db.execute("SELECT 1 AS one FROM server_identity WHERE sealed_key IS NOT NULL")
        return keys.isEmpty ? nil : "this database's installation key is"
    }

    /// Records this key's check in the database, or refuses if the database remembers another
    /// key's while anything sealed with that one is left (a second factor, the installation
    /// key): it would no longer open. With nothing sealed, the new key takes over (a database restored without its key
    /// file, before anyone turned two-factor sign-in on); TOTP secrets offered but not yet
    /// activated are dropped with the old key.
    func claim(_ db: any SQLExecutor) throws {
        try db.execute(
            "INSERT INTO server_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
            [.text(Self.checkName), .text(check), .integer(Int64(Date().timeIntervalSince1970))])
        let stored = try db.execute("SELECT value FROM server_secrets WHERE name = $1", [.text(Self.checkName)])
            .first?.string("value")
        guard let stored, stored != check else { return }
        if let sealed = try Self.sealed(in: db) {
            throw ConfigurationError(
                "the secrets key is not the one this database was sealed with (\(sealed) sealed with it); give "
                    + "the server the key file it was first started with (every replica the same)")
        }
        try db.execute("UPDATE session_factors SET totp_setup = NULL WHERE totp_setup IS NOT NULL")
        try db.execute(
            "UPDATE server_secrets SET value = $1, created_at = $2 WHERE name = $3 AND value = $4",
            [.text(check), .integer(Int64(Date().timeIntervalSince1970)), .text(Self.checkName), .text(stored)])
    }
}
