import COpenSSL
import Foundation

/// What checking a password against a stored hash came to.
public struct PasswordCheck: Sendable, Equatable {
    /// Whether the password matches.
    public var matches: Bool
    /// The PBKDF2 iterations the check spent (the stored hash's cost; 0 for a malformed hash).
    public var iterations: Int

    /// Creates a result.
    public init(matches: Bool, iterations: Int) {
        self.matches = matches
        self.iterations = iterations
    }
}

/// Hashes and checks passwords. ``PasswordHasher`` is the implementation; tests wrap it to
/// interleave requests on purpose (a check that waits at a barrier) or to count the work spent.
public protocol PasswordHashing: Sendable {
    /// The iteration count of new hashes: the configured cost.
    var iterations: Int { get }
    /// A new salted hash of `password` at the configured cost.
    func hash(_ password: String) throws -> String
    /// Checks `password` against `encoded`, at the cost stored in `encoded`.
    func verify(_ password: String, against encoded: String) -> PasswordCheck
    /// Spends what `iterations` PBKDF2 iterations cost, and nothing else.
    func spend(iterations: Int)
}

extension PasswordHashing {
    /// Checks `password` against `stored` so that the time spent never tells whether an account
    /// exists or what its hash costs: with no hash, or a cheaper one than configured, the
    /// difference is spent too. (A cheaper hash is remade at the configured cost at its next
    /// successful sign-in; see ``needsUpgrade(_:)``.)
    public func checkEqualized(_ password: String, against stored: String?) -> Bool {
        let check = stored.map { verify(password, against: $0) } ?? PasswordCheck(matches: false, iterations: 0)
        if check.iterations < iterations { spend(iterations: iterations - check.iterations) }
        return check.matches
    }

    /// Checks `password` against `stored` so that every check costs the time of the costliest
    /// hash the server holds: the configured cost, or `costliest` (a hash brought by
    /// `users import`, or made at an earlier, higher cost, and not yet rehashed) when that takes
    /// longer. The time spent never tells whether an account exists, nor whether its hash was
    /// imported, nor at what cost or with which algorithm.
    ///
    /// PBKDF2 against PBKDF2 is padded in iterations, exactly; a check that involves bcrypt (the
    /// stored hash or the costliest) is padded by time, with PBKDF2 iterations that take the
    /// difference here (`timing` learns the rates from the checks themselves).
    public func checkEqualized(
        _ password: String, against stored: String?, costliest: HashCost?, timing: HashTiming
    ) -> Bool {
        let configured = HashCost.pbkdf2(iterations: iterations)
        let target = costliest.map { timing.costlier(configured, $0) } ?? configured
        let cost = stored.flatMap(HashCost.init(of:))
        let started = ContinuousClock.now
        let check = stored.map { verify(password, against: $0) } ?? PasswordCheck(matches: false, iterations: 0)
        let elapsed = ContinuousClock.now - started
        if let cost { timing.record(cost, took: elapsed) }
        let padding: Int
        switch (target, cost) {
        case (.pbkdf2(let goal), nil), (.pbkdf2(let goal), .pbkdf2?):
            padding = goal - check.iterations
        default:
            padding = timing.iterations(for: timing.time(of: target) - elapsed)
        }
        if padding > 0 {
            let padded = ContinuousClock.now
            spend(iterations: padding)
            timing.record(.pbkdf2(iterations: padding), took: ContinuousClock.now - padded)
        }
        return check.matches
    }

    /// Whether `encoded` is made again at the configured cost at its next successful sign-in: a
    /// PBKDF2 hash of fewer iterations, or a hash of another algorithm (bcrypt, brought by
    /// `users import`). A PBKDF2 hash of more iterations stays as it is: a sign-in never lowers
    /// a hash's cost.
    public func needsUpgrade(_ encoded: String) -> Bool {
        guard let stored = PasswordHasher.iterations(of: encoded) else { return true }
        return stored < iterations
    }
}

/// PBKDF2-HMAC-SHA256 password hashes from OpenSSL, in Django's encoding:
/// `pbkdf2_sha256$<iterations>$<salt>$<base64 hash>`.
///
/// Verification is constant-time and accepts any iteration count stored in the hash, so the
/// cost can be raised without invalidating existing passwords.
public struct PasswordHasher: PasswordHashing {
    /// The default cost: OWASP's 2023 recommendation for PBKDF2-HMAC-SHA256.
    public static let defaultIterations = 600_000

    /// The iteration count used for new hashes.
    public let iterations: Int
    private let random: any RandomSource

    /// Creates a hasher; tests may lower `iterations` (never below 1,000).
    public init(iterations: Int = PasswordHasher.defaultIterations, random: any RandomSource = SystemRandom()) {
        self.iterations = max(1000, iterations)
        self.random = random
    }

    /// A new salted hash of `password`.
    public func hash(_ password: String) throws -> String {
        let salt = Digest.hex(try random.bytes(16))
        let derived = try Self.derive(password, salt: salt, iterations: iterations)
        return "pbkdf2_sha256$\(iterations)$\(salt)$\(Data(derived).base64EncodedString())"
    }

    /// Whether `password` matches `encoded`; false for any malformed hash. A bcrypt hash brought
    /// by `users import` (``BcryptHash``) is checked too; it reports no PBKDF2 iterations, so the
    /// equalized check spends the configured cost besides, and the sign-in rehashes it.
    public func verify(_ password: String, against encoded: String) -> PasswordCheck {
        if let bcrypt = BcryptHash(encoded) { return PasswordCheck(matches: bcrypt.verify(password), iterations: 0) }
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "pbkdf2_sha256", let rounds = Self.iterations(of: encoded),
            let expected = Data(base64Encoded: String(parts[3])),
            let derived = try? Self.derive(password, salt: String(parts[2]), iterations: rounds)
        else { return PasswordCheck(matches: false, iterations: 0) }
        return PasswordCheck(matches: Digest.constantTimeEquals(derived, Array(expected)), iterations: rounds)
    }

    /// Runs PBKDF2 for `iterations` rounds and throws the result away.
    public func spend(iterations: Int) {
        guard iterations > 0 else { return }
        _ = try? Self.derive("", salt: "0000000000000000", iterations: iterations)
    }

    /// Whether a hash from another system can be stored as it is (`homeport-server users import`):
    /// Django's `pbkdf2_sha256$…` (Homeport's own format), bcrypt in a spelling ``BcryptHash``
    /// reads (where this system checks bcrypt), or Django's unusable password (`!…`, an account
    /// that signs in only after a reset).
    public static func isImportable(_ encoded: String) -> Bool {
        if encoded.hasPrefix("!") { return encoded.utf8.count <= 128 }
        if BcryptHash(encoded) != nil { return BcryptHash.isSupported }
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard iterations(of: encoded) != nil, (1...128).contains(parts[2].utf8.count),
            !parts[2].utf8.contains(UInt8(ascii: "$")), let hash = Data(base64Encoded: String(parts[3]))
        else { return false }
        return hash.count == 32
    }

    /// The iteration count stored in a hash, or `nil` when it is not one of ours.
    public static func iterations(of encoded: String) -> Int? {
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "pbkdf2_sha256", let rounds = Int(parts[1]), rounds >= 1,
            rounds <= 100_000_000
        else { return nil }
        return rounds
    }

    private static func derive(_ password: String, salt: String, iterations: Int) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        let passwordBytes = Array(password.utf8)
        let saltBytes = Array(salt.utf8)
        let status = passwordBytes.withUnsafeBufferPointer { pw in
            saltBytes.withUnsafeBufferPointer { s in
                PKCS5_PBKDF2_HMAC(
                    pw.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) },
                    Int32(pw.count), s.baseAddress, Int32(s.count), Int32(iterations), EVP_sha256(), 32, &output)
            }
        }
        guard status == 1 else { throw CryptoError.kdfFailed }
        return output
    }
}
