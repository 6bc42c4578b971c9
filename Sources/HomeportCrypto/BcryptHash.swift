#if canImport(Glibc)
    import Glibc
#endif
#if os(Linux)
    import CCrypt
#endif

/// A bcrypt password hash brought from another system (`homeport-server users import`), checked
/// through the system's libcrypt until the account's first successful sign-in rehashes it to
/// Homeport's own format. Three spellings are taken:
///
/// - `$2b$12$…` (also `$2a$`, `$2y$`), as most systems store it;
/// - `bcrypt$$2b$12$…`, Django's `BCryptPasswordHasher`;
/// - `bcrypt_sha256$$2b$12$…`, Django's `BCryptSHA256PasswordHasher`, which hashes the password
///   with SHA-256 (as hex) first.
public struct BcryptHash: Sendable, Hashable {
    /// The bcrypt string itself (`$2b$12$` and 53 characters of salt and hash).
    public let setting: String
    /// Whether the password goes through SHA-256 first (Django's `bcrypt_sha256`).
    public let prehashed: Bool

    /// Reads a stored hash; `nil` when it is not bcrypt in one of the three spellings.
    public init?(_ encoded: String) {
        var rest = Substring(encoded)
        var prehashed = false
        if rest.hasPrefix("bcrypt_sha256$") {
            rest = rest.dropFirst("bcrypt_sha256$".count)
            prehashed = true
        } else if rest.hasPrefix("bcrypt$") {
            rest = rest.dropFirst("bcrypt$".count)
        }
        let parts = rest.split(separator: "$", omittingEmptySubsequences: false)
        let alphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8
        guard parts.count == 4, parts[0].isEmpty, ["2a", "2b", "2y"].contains(parts[1]),
            let cost = Int(parts[2]), parts[2].count == 2, (4...31).contains(cost), parts[3].utf8.count == 53,
            parts[3].utf8.allSatisfy(alphabet.contains)
        else { return nil }
        setting = String(rest)
        self.prehashed = prehashed
    }

    /// Its cost: 2^cost rounds.
    public var cost: Int {
        let parts = setting.split(separator: "$", omittingEmptySubsequences: false)
        return parts.count > 2 ? Int(parts[2]) ?? 31 : 31
    }

    /// Whether this system can check bcrypt hashes (libcrypt with bcrypt, on Linux).
    public static var isSupported: Bool {
        #if os(Linux)
            true
        #else
            false
        #endif
    }

    /// Whether `password` matches; false when the system cannot check bcrypt.
    public func verify(_ password: String) -> Bool {
        #if os(Linux)
            let phrase = prehashed ? Digest.sha256Hex(password) : password
            // A NUL would end the C string early, and bcrypt would check a shorter password.
            guard !phrase.utf8.contains(0) else { return false }
            let size = MemoryLayout<crypt_data>.size
            let data = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
            defer {
                data.initializeMemory(as: UInt8.self, repeating: 0, count: size)
                data.deallocate()
            }
            data.initializeMemory(as: UInt8.self, repeating: 0, count: size)
            guard let result = crypt_rn(phrase, setting, data, Int32(size)) else { return false }
            return Digest.constantTimeEquals(
                Array(UnsafeRawBufferPointer(start: result, count: strlen(result))), Array(setting.utf8))
        #else
            return false
        #endif
    }
}
