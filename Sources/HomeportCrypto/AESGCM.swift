import COpenSSL

/// AES-256-GCM from OpenSSL: a 12-byte random nonce, a 16-byte tag, and associated data that
/// must match at decryption (so a sealed box only opens in the context it was sealed for).
public enum AESGCM {
    /// Why sealing or opening failed.
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The key is not 32 bytes.
        case badKey
        /// The box is damaged, or the key or associated data differ from sealing.
        case authenticationFailed
        /// OpenSSL failed.
        case cryptoFailed

        /// A sentence for people.
        public var description: String {
            switch self {
            case .badKey: "the key is not 256 bits"
            case .authenticationFailed: "the data is damaged or belongs elsewhere (wrong key or context)"
            case .cryptoFailed: "the cipher failed"
            }
        }
    }

    /// Seals `plaintext`: returns nonce ‖ ciphertext ‖ tag.
    public static func seal(
        _ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8], random: any RandomSource = SystemRandom()
    ) throws -> [UInt8] {
        guard key.count == 32 else { throw Failure.badKey }
        let nonce = try random.bytes(12)
        return nonce + (try encrypt(plaintext, cipher: EVP_aes_256_gcm(), key: key, nonce: nonce, associatedData))
    }

    /// GCM encryption with `cipher` (AES-128 or AES-256 GCM): ciphertext ‖ 16-byte tag.
    static func encrypt(
        _ plaintext: [UInt8], cipher: OpaquePointer?, key: [UInt8], nonce: [UInt8], _ associatedData: [UInt8]
    ) throws -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { throw Failure.cryptoFailed }
        defer { EVP_CIPHER_CTX_free(context) }
        var length: Int32 = 0
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: 16)
        guard EVP_EncryptInit_ex(context, cipher, nil, key, nonce) == 1,
            associatedData.isEmpty
                || EVP_EncryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1,
            plaintext.isEmpty
                || EVP_EncryptUpdate(context, &ciphertext, &length, plaintext, Int32(plaintext.count)) == 1
        else { throw Failure.cryptoFailed }
        var total = plaintext.isEmpty ? 0 : length
        let finished = ciphertext.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context, buffer.baseAddress! + Int(total), &length)
        }
        guard finished == 1, EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, 16, &tag) == 1 else {
            throw Failure.cryptoFailed
        }
        total += length
        return Array(ciphertext[0..<Int(total)]) + tag
    }

    /// Opens a box made by ``seal(_:key:associatedData:random:)``; fails unless key and associated data match.
    public static func open(_ box: [UInt8], key: [UInt8], associatedData: [UInt8]) throws -> [UInt8] {
        guard key.count == 32 else { throw Failure.badKey }
        guard box.count >= 28 else { throw Failure.authenticationFailed }
        let nonce = Array(box[0..<12])
        let ciphertext = Array(box[12..<(box.count - 16)])
        var tag = Array(box[(box.count - 16)...])
        guard let context = EVP_CIPHER_CTX_new() else { throw Failure.cryptoFailed }
        defer { EVP_CIPHER_CTX_free(context) }
        var length: Int32 = 0
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1,
            associatedData.isEmpty
                || EVP_DecryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1,
            ciphertext.isEmpty
                || EVP_DecryptUpdate(context, &plaintext, &length, ciphertext, Int32(ciphertext.count)) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1
        else { throw Failure.cryptoFailed }
        let total = ciphertext.isEmpty ? 0 : length
        let finished = plaintext.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + Int(total), &length)
        }
        guard finished == 1 else { throw Failure.authenticationFailed }
        return Array(plaintext[0..<Int(total + length)])
    }
}
