import Foundation
import HomeportCrypto
import HomeportStorage

/// Keys only the server knows, one row each in `server_secrets`, shared by every replica (so a
/// token one replica signs, another accepts). Created on first use, race-free like the identity.
struct ServerSecrets {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// The 32-byte secret called `name`, created when missing.
    func secret(named name: String, random: any RandomSource = SystemRandom()) throws -> [UInt8] {
        if let stored = try read(name) { return stored }
        try db.execute(
            "INSERT INTO server_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
            [.text(name), .text(Digest.hex(try random.bytes(32))), .integer(Int64(Date().timeIntervalSince1970))])
        guard let stored = try read(name) else {
            throw StorageError.statementFailed(code: "secret", message: "the \(name) secret could not be read back")
        }
        return stored
    }

    private func read(_ name: String) throws -> [UInt8]? {
        guard
            let hex = try db.execute("SELECT value FROM server_secrets WHERE name = $1", [.text(name)]).first?
                .string("value"), hex.count == 64
        else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}
