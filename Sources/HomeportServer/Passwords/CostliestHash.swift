import Foundation
import HomeportCrypto
import HomeportStorage
import Synchronization

/// The costliest password hash the accounts hold that came from another system (`users import`)
/// and is not remade yet (at its account's next sign-in, change or reset), read from the
/// accounts `imported_password_hashes` names, never from every account. Every password check is padded to it (see
/// `PasswordHashing.checkEqualized(_:against:costliest:timing:)`), so a wrong password takes as
/// long for an imported account as for a native one or none.
///
/// Read from the database at most every ``refresh`` (a `users import` run by another process is
/// seen within it), and at once by the process that imports.
final class CostliestHash: Sendable {
    /// How long a reading is used.
    static let refresh: Duration = .seconds(10)

    private struct Reading {
        var cost: HashCost?
        var at: ContinuousClock.Instant
    }

    private let reading = Mutex<Reading?>(nil)
    /// A reading in progress: the others use the last one meanwhile (one scan at a time).
    private let scanning = Mutex(false)
    private let timing: HashTiming

    init(timing: HashTiming) {
        self.timing = timing
    }

    /// The costliest hash held that is not at `configured` iterations; `nil` when there is none
    /// (or it cannot be read: the configured cost is then the target, as before any import).
    func value(in database: any SQLExecutor, configured: Int) -> HashCost? {
        let now = ContinuousClock.now
        let cached = reading.withLock { $0 }
        if let cached, now - cached.at < Self.refresh { return cached.cost }
        // One scan at a time; the others use the last reading (before the first: none).
        guard
            scanning.withLock({ scanning in
                scanning
                    ? false
                    : {
                        scanning = true; return true
                    }()
            })
        else {
            return cached?.cost
        }
        defer { scanning.withLock { $0 = false } }
        guard let hashes = try? AccountStore(database).importedHashes() else { return reading.withLock { $0?.cost } }
        var costliest: HashCost?
        for hash in hashes {
            // A hash over the standard ceiling (imported with a raised --max-import-cost, or before
            // there was one) is checked at its own cost: padding everyone's check to it would let
            // one account hold every sign-in for as long. One at the configured cost is no import.
            guard let cost = HashCost(of: hash), HashCeiling.standard.allows(cost),
                cost != .pbkdf2(iterations: configured)
            else { continue }
            costliest = costliest.map { timing.costlier($0, cost) } ?? cost
        }
        reading.withLock { $0 = Reading(cost: costliest, at: now) }
        return costliest
    }

    /// Forgets the reading: the next check reads the accounts again.
    func forget() {
        reading.withLock { $0 = nil }
    }
}
