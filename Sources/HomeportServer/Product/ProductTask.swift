/// Work a product runs in the background on every replica: first after one ``interval``, then
/// every ``interval``, until the server stops. A failure is logged and the next run comes as
/// planned. Tasks on several replicas run at once: make the work safe for that (claim rows in a
/// transaction, as the notification outbox does).
public struct ProductTask: Sendable {
    /// Names it in logs.
    public var name: String
    /// How often it runs.
    public var interval: Duration
    /// The work.
    public var work: @Sendable (ProductServices) throws -> Void

    /// Declares a task.
    public init(_ name: String, every interval: Duration, _ work: @escaping @Sendable (ProductServices) throws -> Void)
    {
        self.name = name
        self.interval = interval
        self.work = work
    }
}
