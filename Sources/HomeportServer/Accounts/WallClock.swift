import Foundation

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
