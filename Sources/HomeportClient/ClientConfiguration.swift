/// Limits and timings of the client.
public struct ClientConfiguration: Sendable {
    /// Total time an identity probe may take.
    public var probeDeadline: Duration = .seconds(3)
    /// Total time an API request may take.
    public var requestDeadline: Duration = .seconds(10)
    /// Largest JSON answer read.
    public var byteLimit = 1 << 20
    /// After the first address answers with the right id, how long to wait for a more preferred one.
    public var preferenceWindow: Duration = .milliseconds(50)
    /// How long a chosen address is reused on the same network path before choosing again.
    public var winnerLifetime: Duration = .seconds(60)

    /// The defaults.
    public init() {}
}
