import HomeportWire

/// Limits and timings of the client.
public struct ClientConfiguration: Sendable {
    /// Total time an identity probe may take.
    public var probeDeadline: Duration = .seconds(3)
    /// Total time an API request may take.
    public var requestDeadline: Duration = .seconds(10)
    /// Largest JSON answer read.
    public var byteLimit = 1 << 20
    /// After the first address answers with the right id, the longest wait for a more preferred
    /// one. The wait itself comes from the most preferred address's own round trip on this
    /// network path, as measured before (three times it, plus a millisecond, at least two): a
    /// blackholed LAN address costs a few of its own round trips, not this bound.
    public var preferenceWindow: Duration = .milliseconds(50)
    /// How long a chosen address is reused on the same network path before choosing again.
    public var winnerLifetime: Duration = .seconds(60)

    /// The key of the product's block in a push payload (`homeport`, or a product's own name).
    public var pushAppDataKey = PushPayload.defaultAppDataKey
    /// The URL scheme of the app's deep links: `<scheme>://session/{id}`.
    public var deepLinkScheme = "homeport"
    /// After a catalogue resync of a server, how long a push with yet another `mv` waits before it
    /// may start the next one (a server that keeps changing `mv` cannot keep the app fetching).
    public var catalogueResyncInterval: Duration = .seconds(30)

    /// Largest server-sent event read on the notification stream (its lines as they arrive).
    public var streamEventLimit = 64 * 1024
    /// How long the notification stream may stay silent (no event, no heartbeat) before the
    /// client drops it and reconnects; the server sends a heartbeat every 15 s.
    public var streamIdleTimeout: Duration = .seconds(45)
    /// How long one connection of the notification stream is kept before the client reconnects
    /// through a fresh race, resuming after the last event.
    public var streamLifetime: Duration = .seconds(30 * 60)
    /// The first wait before reconnecting after a failure; it doubles up to ``streamMaximumRetryDelay``.
    public var streamRetryDelay: Duration = .seconds(1)
    /// The longest wait before reconnecting.
    public var streamMaximumRetryDelay: Duration = .seconds(60)

    /// Where the client reads the network path before it chooses an address (every request, every
    /// reconnection of the stream): a change is handled as ``HomeportClient/networkPathChanged(to:)``
    /// handles it, so a long-lived client re-verifies after a move even when nobody tells it.
    /// `nil` (the default) leaves the path to the app (`NetworkPathMonitor` on Apple platforms);
    /// on Linux, `SystemNetworkPath.current` reads the default route cheaply.
    public var networkPathSource: (@Sendable () -> String)?

    /// Called before each API request of ``HomeportClient/send(_:_:to:json:headers:)`` and
    /// ``HomeportClient/send(_:_:to:json:headers:as:decoder:)`` goes, with what the app may see
    /// and change of it: to log it, or to add `Accept-Language`. It never sees the session token,
    /// and anything else it sets (an `Authorization`, a cookie, a `Host`, a field its caller set,
    /// a value with a line break) fails the request with nothing sent.
    public var requestHook: (@Sendable (inout OutgoingRequest) -> Void)?

    /// The defaults.
    public init() {}
}
