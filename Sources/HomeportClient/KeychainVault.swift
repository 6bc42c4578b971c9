#if canImport(Security)
    import Foundation
    import Security

    /// A vault in the Keychain: one generic-password item per server, this device only, readable
    /// after first unlock (so a notification extension can read it), never synchronised.
    public final class KeychainVault: CredentialVault, @unchecked Sendable {
        private let service: String
        private let accessGroup: String?

        /// Creates a vault under `service`, optionally in a shared access group (app + extensions).
        public init(service: String = "homeport.session-token", accessGroup: String? = nil) {
            self.service = service
            self.accessGroup = accessGroup
        }

        private func query(_ server: String) -> [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                kSecAttrAccount as String: server, kSecAttrSynchronizable as String: false,
                // The data-protection keychain on macOS too, where "this device only" then holds.
                kSecUseDataProtectionKeychain as String: true,
            ]
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        /// Stores the token, replacing any other.
        public func store(token: String, for server: String) throws {
            try remove(server: server)
            var item = query(server)
            item[kSecValueData as String] = Data(token.utf8)
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let status = SecItemAdd(item as CFDictionary, nil)
            guard status == errSecSuccess else { throw ClientError.vault("Keychain add failed (\(status))") }
        }

        /// The token.
        public func token(for server: String) throws -> String? {
            var item = query(server)
            item[kSecReturnData as String] = true
            item[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(item as CFDictionary, &result)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = result as? Data else {
                throw ClientError.vault("Keychain read failed (\(status))")
            }
            return String(decoding: data, as: UTF8.self)
        }

        /// Erases the token.
        public func remove(server: String) throws {
            let status = SecItemDelete(query(server) as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw ClientError.vault("Keychain delete failed (\(status))")
            }
        }
    }
#endif
