import Foundation
import HomeportCrypto
import Synchronization

/// The real PBKDF2 hasher with two test hooks: a gate that holds a password check, once it has
/// its result, until the test opens it (so a second request lands in between, on purpose, not
/// by luck), and a meter of the PBKDF2 iterations spent.
public final class GatedHasher: PasswordHashing, @unchecked Sendable {
    private let base: PasswordHasher
    private let state = Mutex(State())
    private let entered = DispatchSemaphore(value: 0)
    private let release = DispatchSemaphore(value: 0)

    private struct State {
        var armed = false
        /// The next new hash waits at the gate too.
        var armedForHashes = false
        var spent = 0

        /// One request waits at the gate, at its first check or hash: after it, none.
        mutating func disarm(if held: Bool) {
            guard held else { return }
            armed = false
            armedForHashes = false
        }
    }

    /// Wraps a real hasher of `iterations`.
    public init(iterations: Int = 1000) {
        base = PasswordHasher(iterations: iterations)
    }

    /// The configured cost.
    public var iterations: Int { base.iterations }

    /// A real hash, metered; when the gate is armed for hashes, it then waits until ``open()``.
    public func hash(_ password: String) throws -> String {
        let hold = state.withLock { state in
            state.spent += base.iterations
            defer { state.disarm(if: state.armedForHashes) }
            return state.armedForHashes
        }
        let hashed = try base.hash(password)
        if hold {
            entered.signal()
            release.wait()
        }
        return hashed
    }

    /// A real check; when the gate is armed, it then waits until ``open()``.
    public func verify(_ password: String, against encoded: String) -> PasswordCheck {
        let check = base.verify(password, against: encoded)
        let hold = state.withLock { state in
            state.spent += check.iterations
            defer { state.disarm(if: state.armed) }
            return state.armed
        }
        if hold {
            entered.signal()
            release.wait()
        }
        return check
    }

    /// Real work, metered.
    public func spend(iterations: Int) {
        state.withLock { $0.spent += iterations }
        base.spend(iterations: iterations)
    }

    /// Makes the next check wait at the gate (and the next new hash, with `hashes`).
    public func arm(hashes: Bool = false) {
        state.withLock {
            $0.armed = true
            $0.armedForHashes = hashes
        }
    }

    /// Waits until a check is held at the gate; false after `timeout` seconds.
    public func waitUntilHeld(timeout: Double = 30) -> Bool {
        entered.wait(timeout: .now() + timeout) == .success
    }

    /// Lets the held check go on.
    public func open() {
        release.signal()
    }

    /// PBKDF2 iterations spent by hashes, checks and padding since the last ``resetMeter()``.
    public var spent: Int { state.withLock { $0.spent } }

    /// Sets the meter to zero.
    public func resetMeter() {
        state.withLock { $0.spent = 0 }
    }
}
