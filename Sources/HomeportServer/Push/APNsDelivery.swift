import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import Synchronization

/// Sends pushes to APNs with the developer's auth key: the provider token shared through the
/// database (``ProviderTokenSource``), and a small pool of HTTP/2 clients, one per thread that
/// sends at once (a server's one sender thread; a gateway's request threads), each keeping its
/// connection open between batches.
///
/// `ExpiredProviderToken` gets a fresh provider token once, and the pushes it refused are sent
/// again at once.
package final class APNsDelivery: PushTransport {
    private let configuration: APNsClient.Configuration
    private let tokens: ProviderTokenSource
    private let logger: Logger
    /// Clients not in use; a thread takes one (or makes one) for a batch and gives it back.
    private let idle = Mutex<[APNsClient]>([])

    package init(database: any Database, settings: APNsSettings, clock: any WallClock, logger: Logger) throws {
        self.configuration = settings.client
        self.tokens = try ProviderTokenSource(
            database: database, key: try ES256Key(pem: settings.keyPEM), keyID: settings.keyID, teamID: settings.teamID,
            clock: clock)
        self.logger = logger
    }

    func deliver(_ items: [OutboxItem]) throws -> [APNsResponse] {
        try send(APNsRequest.batch(items))
    }

    /// Sends `requests` on one client and returns Apple's answers, in order.
    package func send(_ requests: [APNsRequest]) throws -> [APNsResponse] {
        let client = idle.withLock { $0.popLast() } ?? APNsClient(configuration: configuration)
        defer { idle.withLock { $0.append(client) } }
        var token = try tokens.current()
        var responses = client.send(requests, authorization: token.jwt)
        let rejected = responses.indices.filter { responses[$0].outcome == .providerTokenRejected }
        if !rejected.isEmpty, let fresh = try tokens.refresh(after: token) {
            logger.notice("APNs refused the provider token; sending again with a new one")
            token = fresh
            let again = client.send(rejected.map { requests[$0] }, authorization: token.jwt)
            for (index, response) in zip(rejected, again) { responses[index] = response }
        }
        return responses
    }
}
