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

        /// Opens the vault in `directory`, creating it with mode 0700 when it does not exist. An
        /// existing directory is used only when it belongs to this user and nobody else can write
        /// to it (its mode is never changed); otherwise this throws
        /// ``ClientError/unsafeDirectory(path:reason:)``.
        public init(directory: String) throws {
            self.directory = directory
            try OwnerOnlyDirectory.prepare(directory)
        }

        /// Seals and writes the token.
        public func store(token: String, for server: String) throws {
            try lock.withLock {
                let box = try AESGCM.seal(Array(token.utf8), key: try key(), associatedData: Array(server.utf8))
                try AtomicFile.write(Data(box), to: path(server))
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

        /// Deletes the file; a file that cannot be deleted is an error, a missing one is not.
        public func remove(server: String) throws {
            try lock.withLock {
                if unlink(path(server)) != 0 && errno != ENOENT {
                    throw ClientError.vault(
                        "cannot erase the credential of \(server): \(String(cString: strerror(errno)))")
                }
            }
        }

        /// The file of `server` (named by a hash, so names leak nothing and need no escaping).
        public func path(_ server: String) -> String {
            directory + "/" + Digest.sha256Hex(server).prefix(32) + ".token"
        }

        /// The vault key: read, or created exactly once (two first runs cannot each write one). It
        /// is used only as a regular file of this user's that nobody else can read (not through a
        /// symbolic link), as the directory is.
        private func key() throws -> [UInt8] {
            let keyPath = directory + "/vault.key"
            var fd = try OwnerOnlyDirectory.openSecret(keyPath)
            if fd == nil {
                _ = try AtomicFile.createExclusively(keyPath, Data(try SystemRandom().bytes(32)))
                fd = try OwnerOnlyDirectory.openSecret(keyPath)
            }
            guard let fd else { throw ClientError.vault("\(keyPath) vanished as it was made") }
            defer { close(fd) }
            var key = [UInt8](repeating: 0, count: 33)
            let count = read(fd, &key, key.count)
            guard count == 32 else {
                throw ClientError.vault(
                    "\(keyPath) is unreadable or not a 256-bit key; stored credentials cannot be opened")
            }
            return Array(key.prefix(32))
        }
    }
#endif
