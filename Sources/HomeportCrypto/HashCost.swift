import Foundation
import Synchronization

/// What checking a stored password hash costs, in its own algorithm's unit.
public enum HashCost: Sendable, Hashable, CustomStringConvertible {
    /// PBKDF2-HMAC-SHA256 at this many iterations (Django's and Homeport's `pbkdf2_sha256$…`).
    case pbkdf2(iterations: Int)
    /// bcrypt at this cost (2^cost rounds), in any spelling ``BcryptHash`` reads.
    case bcrypt(cost: Int)

    /// The cost of checking `encoded`; `nil` for a hash that is not checked at all (an unusable
    /// password, or a malformed one).
    public init?(of encoded: String) {
        if let bcrypt = BcryptHash(encoded) {
            self = .bcrypt(cost: bcrypt.cost)
        } else if let iterations = PasswordHasher.iterations(of: encoded) {
            self = .pbkdf2(iterations: iterations)
        } else {
            return nil
        }
    }

    /// `pbkdf2_sha256 at 600000 iterations`, `bcrypt at cost 12`.
    public var description: String {
        switch self {
        case .pbkdf2(let iterations): "pbkdf2_sha256 at \(iterations) iterations"
        case .bcrypt(let cost): "bcrypt at cost \(cost)"
        }
    }
}

/// How long password work takes on this machine, learned from the work itself: nanoseconds per
/// PBKDF2 iteration and per bcrypt round (a 2^cost unit), each a moving average of what was
/// measured. It lets a check of one algorithm be padded to the time of another.
public final class HashTiming: Sendable {
    private struct Rates {
        var perIteration: Double?
        var perBcryptRound: Double?
    }

    private let rates = Mutex(Rates())

    /// Starts with nothing measured: the first use measures a small run of each algorithm.
    public init() {}

    /// Records that `cost`'s check took `elapsed`.
    public func record(_ cost: HashCost, took elapsed: Duration) {
        let nanoseconds = Self.nanoseconds(elapsed)
        guard nanoseconds > 0 else { return }
        rates.withLock { rates in
            switch cost {
            case .pbkdf2(let iterations) where iterations >= 1000:
                rates.perIteration = Self.blend(rates.perIteration, nanoseconds / Double(iterations))
            case .bcrypt(let cost):
                rates.perBcryptRound = Self.blend(rates.perBcryptRound, nanoseconds / Double(1 << cost))
            default: break
            }
        }
    }

    /// How long checking a hash of `cost` takes here.
    public func time(of cost: HashCost) -> Duration {
        switch cost {
        case .pbkdf2(let iterations): .nanoseconds(Int64(perIteration() * Double(iterations)))
        case .bcrypt(let cost): .nanoseconds(Int64(perBcryptRound() * Double(1 << cost)))
        }
    }

    /// The PBKDF2 iterations that take `duration` here.
    public func iterations(for duration: Duration) -> Int {
        Int(Self.nanoseconds(duration) / perIteration())
    }

    /// The costlier of two costs, in time.
    public func costlier(_ a: HashCost, _ b: HashCost) -> HashCost {
        time(of: b) > time(of: a) ? b : a
    }

    private func perIteration() -> Double {
        if let rate = rates.withLock({ $0.perIteration }) { return rate }
        let started = ContinuousClock.now
        PasswordHasher(iterations: 20_000).spend(iterations: 20_000)
        record(.pbkdf2(iterations: 20_000), took: ContinuousClock.now - started)
        return rates.withLock { $0.perIteration } ?? 300
    }

    private func perBcryptRound() -> Double {
        if let rate = rates.withLock({ $0.perBcryptRound }) { return rate }
        // Any well-formed setting costs the same to check: a cost-6 run, extrapolated (bcrypt's
        // time is its rounds').
        let setting = "$2b$06$" + String(repeating: "a", count: 53)
        let started = ContinuousClock.now
        _ = BcryptHash(setting)?.verify("calibration")
        record(.bcrypt(cost: 6), took: ContinuousClock.now - started)
        return rates.withLock { $0.perBcryptRound } ?? 50_000
    }

    private static func blend(_ old: Double?, _ new: Double) -> Double {
        guard let old else { return new }
        return old * 0.8 + new * 0.2
    }

    private static func nanoseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
    }
}

/// The costliest hash `users import` takes, and the most a password check is padded to: past
/// it, one wrong password against one account could hold a password thread for minutes.
public struct HashCeiling: Sendable, Hashable, CustomStringConvertible {
    /// The most PBKDF2 iterations.
    public var pbkdf2Iterations: Int
    /// The highest bcrypt cost.
    public var bcryptCost: Int

    /// Twice Django 5.2's PBKDF2 count (1,000,000), and bcrypt cost 14 (four times the common 12).
    public static let standard = HashCeiling(pbkdf2Iterations: 2_000_000, bcryptCost: 14)

    /// Creates a ceiling.
    public init(pbkdf2Iterations: Int, bcryptCost: Int) {
        self.pbkdf2Iterations = pbkdf2Iterations
        self.bcryptCost = bcryptCost
    }

    /// Reads `pbkdf2=N,bcrypt=C` (either part may be left out: it keeps the standard value);
    /// `nil` for anything else.
    public init?(parsing text: String) {
        var ceiling = HashCeiling.standard
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, let value = Int(pair[1]) else { return nil }
            switch pair[0] {
            case "pbkdf2" where (1000...100_000_000).contains(value): ceiling.pbkdf2Iterations = value
            case "bcrypt" where (4...31).contains(value): ceiling.bcryptCost = value
            default: return nil
            }
        }
        self = ceiling
    }

    /// Whether a hash of `cost` is within the ceiling.
    public func allows(_ cost: HashCost) -> Bool {
        switch cost {
        case .pbkdf2(let iterations): iterations <= pbkdf2Iterations
        case .bcrypt(let cost): cost <= bcryptCost
        }
    }

    /// `pbkdf2=2000000,bcrypt=14`.
    public var description: String { "pbkdf2=\(pbkdf2Iterations),bcrypt=\(bcryptCost)" }
}
