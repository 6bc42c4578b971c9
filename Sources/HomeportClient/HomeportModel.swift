#if canImport(Observation)
    import Observation

    /// The client's state as a SwiftUI view observes it: the servers as they change, and the last
    /// thing the client told the app. Run ``follow()`` for as long as the views show it (in a
    /// `.task {}`, which ends it with the view).
    ///
    /// ```swift
    /// struct ServerList: View {
    ///     @State var model: HomeportModel
    ///     var body: some View {
    ///         List(model.servers, id: \.localID) { Text($0.label ?? $0.primary.url) }
    ///             .task { await model.follow() }
    ///     }
    /// }
    /// ```
    @MainActor @Observable
    public final class HomeportModel {
        /// The client it follows.
        public let client: HomeportClient
        /// The servers, as stored now.
        public private(set) var servers: [ServerRecord]
        /// The newest event (an identity change, a sign-out, …), until the next.
        public private(set) var lastEvent: ClientEvent?

        /// A model of `client`'s state, as stored now.
        public init(client: HomeportClient) {
            self.client = client
            servers = client.directory.all
        }

        /// Follows the server list and the events until the task that runs it is cancelled.
        public func follow() async {
            let changes = client.directory.changes
            let events = client.events
            let following = [
                Task { @MainActor in
                    for await list in changes { self.servers = list }
                },
                Task { @MainActor in
                    for await event in events { self.lastEvent = event }
                },
            ]
            await withTaskCancellationHandler {
                for task in following { await task.value }
            } onCancel: {
                for task in following { task.cancel() }
            }
        }
    }
#endif
