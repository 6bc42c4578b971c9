import COpenSSL

extension AESGCM {
    /// Seals `plaintext` with AES-128-GCM under a 16-byte `key` and the caller's 12-byte `nonce`
    /// (no associated data): returns ciphertext ‖ 16-byte tag. For content encodings whose nonce
    /// is derived, not random (RFC 8188's `aes128gcm`); never reuse a key and nonce pair.
    public static func sealAES128(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) throws -> [UInt8] {
        guard key.count == 16, nonce.count == 12 else { throw Failure.badKey }
        return try encrypt(plaintext, cipher: EVP_aes_128_gcm(), key: key, nonce: nonce, [])
    }
}
