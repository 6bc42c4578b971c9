import Foundation
import Synchronization

/// Wall-clock time, injected so that expiry and rate-limit windows are tested without sleeping.
public protocol WallClock: Sendable {
    /// Now.
    func now() -> Date
}

extension WallClock {
    /// Now, in whole Unix seconds.
    public var unixSeconds: Int64 { Int64(now().timeIntervalSince1970) }
}

/// The system clock.
public struct SystemWallClock: WallClock {
    /// Creates the clock.
    public init() {}

    /// `Date()`.
    public func now() -> Date { Date() }
}

/// A clock that only moves when told to; for tests.
public final class ManualWallClock: WallClock {
    private let current: Mutex<Date>

    /// Starts at `start`.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Mutex(start)
    }

    /// The clock's time.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward.
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
