#if os(Linux)
    import Foundation
    import HomeportCrypto

    /// A vault of AES-256-GCM files (OpenSSL): one file per server, sealed with a key kept in a
    /// 0600 key file and with the server's key as associated data, so a file copied or renamed to
    /// another server's name does not open. Writes are atomic (a temporary file, then a rename).
    public final class FileVault: CredentialVault, @unchecked Sendable {
        /// The vault directory.
        public let directory: String
        private let lock = NSLock()

        /// Opens (creating, mode 0700) the vault in `directory`.
        public init(directory: String) throws {
            self.directory = directory
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw ClientError.vault("cannot create \(directory): \(error.localizedDescription)")
            }
        }

        /// Seals and writes the token.
        public func store(token: String, for server: String) throws {
            try lock.withLock {
                let box = try AESGCM.seal(Array(token.utf8), key: try key(), associatedData: Array(server.utf8))
                try write(Data(box), to: path(server), mode: 0o600)
            }
        }

        /// Reads and opens the token; a file sealed for another server fails to open.
        public func token(for server: String) throws -> String? {
            try lock.withLock {
                guard let data = FileManager.default.contents(atPath: path(server)) else { return nil }
                do {
                    let plain = try AESGCM.open(Array(data), key: try key(), associatedData: Array(server.utf8))
                    return String(decoding: plain, as: UTF8.self)
                } catch {
                    throw ClientError.vault("the credential of \(server) does not open (\(error))")
                }
            }
        }

        /// Deletes the file.
        public func remove(server: String) throws {
            lock.withLock { try? FileManager.default.removeItem(atPath: path(server)) }
        }

        /// The file of `server` (named by a hash, so names leak nothing and need no escaping).
        public func path(_ server: String) -> String {
            directory + "/" + Digest.sha256Hex(server).prefix(32) + ".token"
        }

        private func key() throws -> [UInt8] {
            let keyPath = directory + "/vault.key"
            if let data = FileManager.default.contents(atPath: keyPath) {
                guard data.count == 32 else { throw ClientError.vault("\(keyPath) is not a 256-bit key") }
                return Array(data)
            }
            let key = try SystemRandom().bytes(32)
            try write(Data(key), to: keyPath, mode: 0o600)
            return key
        }

        private func write(_ data: Data, to path: String, mode: Int) throws {
            let temporary = path + ".tmp-\(UUID().uuidString)"
            guard
                FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: mode])
            else { throw ClientError.vault("cannot write \(temporary)") }
            if rename(temporary, path) != 0 {
                try? FileManager.default.removeItem(atPath: temporary)
                throw ClientError.vault("cannot replace \(path)")
            }
        }
    }
#endif
