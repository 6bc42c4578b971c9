import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage

/// Keys only the server knows, one row each in `server_secrets`, shared by every replica (so a
/// token one replica signs, another accepts). Created on first use, race-free like the identity.
struct ServerSecrets {
    let db: any SQLExecutor
    let logger: Logger?

    init(_ db: any SQLExecutor, logger: Logger? = nil) {
        self.db = db
        self.logger = logger
    }

    /// The 32-byte secret called `name`, created when missing.
    ///
    /// A damaged row (not 64 hexadecimal digits) is replaced with a new secret, with a warning:
    /// what it signed (CSRF seeds) stops being accepted, which is what a lost key means anyway,
    /// and the server starts rather than refusing for ever.
    func secret(named name: String, random: any RandomSource = SystemRandom()) throws -> [UInt8] {
        let stored = try db.execute("SELECT value FROM server_secrets WHERE name = $1", [.text(name)]).first
        if let stored, let bytes = Self.decode(stored.string("value")) { return bytes }
        let fresh = Digest.hex(try random.bytes(32))
        if let damaged = stored?.string("value") {
            // Replaced only if still the damaged value: another replica may have replaced it already.
            try db.execute(
                "UPDATE server_secrets SET value = $1, created_at = $2 WHERE name = $3 AND value = $4",
                [.text(fresh), .integer(Int64(Date().timeIntervalSince1970)), .text(name), .text(damaged)])
            logger?.warning(
                "the stored secret was damaged and has been replaced; forms opened before now must be reloaded",
                metadata: ["secret": name])
        } else {
            try db.execute(
                "INSERT INTO server_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
                [.text(name), .text(fresh), .integer(Int64(Date().timeIntervalSince1970))])
        }
        guard let bytes = try read(name) else {
            throw StorageError.statementFailed(code: "secret", message: "the \(name) secret could not be read back")
        }
        return bytes
    }

    private func read(_ name: String) throws -> [UInt8]? {
        Self.decode(
            try db.execute("SELECT value FROM server_secrets WHERE name = $1", [.text(name)]).first?.string("value"))
    }

    /// The bytes of 64 hexadecimal digits; `nil` for anything else.
    private static func decode(_ hex: String?) -> [UInt8]? {
        guard let digits = hex.map(Array.init(_:))?.map(\.hexDigitValue), digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for pair in stride(from: 0, to: 64, by: 2) {
            guard let high = digits[pair], let low = digits[pair + 1] else { return nil }
            bytes.append(UInt8(high << 4 | low))
        }
        return bytes
    }
}
