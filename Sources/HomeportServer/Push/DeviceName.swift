import HomeportCrypto

/// The name the server gives a device whose address is a secret of its own (an FCM registration
/// token, a Web Push endpoint): a prefix and the address's SHA-256 in hex. The name is what
/// answers, paths, logs and operators see; the address never is.
enum DeviceName {
    /// `prefix` and the SHA-256 of `address`, in hex.
    static func make(_ prefix: String, _ address: String) -> String {
        prefix + Digest.sha256Hex(address)
    }

    /// Whether `text` is `prefix` and 64 lowercase hex digits.
    static func isName(_ text: String, prefix: String) -> Bool {
        text.hasPrefix(prefix) && text.utf8.count == prefix.utf8.count + 64
            && text.utf8.dropFirst(prefix.utf8.count).allSatisfy {
                (0x30...0x39).contains($0) || (0x61...0x66).contains($0)
            }
    }
}
