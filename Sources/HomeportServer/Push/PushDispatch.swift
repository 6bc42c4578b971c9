import HomeportAPNs
import HomeportWire

/// The sender's one transport over every push service this process sends to: each item goes to
/// its service's transport (APNs itself or a push gateway; ``WebPushDelivery``; ``FCMDelivery``;
/// a gateway may carry all three, and gets them in one batch).
/// The transport that carries APNs goes first: a transport that throws has then sent nothing of
/// the batch, so the rows that wait out their lease and go again were not delivered already.
final class PushDispatch: PushTransport {
    /// Each push service's transport.
    private let routes: [PushProvider: any PushTransport]

    init(_ routes: [PushProvider: any PushTransport]) {
        self.routes = routes
    }

    /// The transports, each once, APNs's first.
    private var transports: [(transport: any PushTransport, providers: Set<PushProvider>)] {
        var transports: [(transport: any PushTransport, providers: Set<PushProvider>)] = []
        for provider in PushProvider.allCases {
            guard let transport = routes[provider] else { continue }
            if let index = transports.firstIndex(where: { $0.transport === transport }) {
                transports[index].providers.insert(provider)
            } else {
                transports.append((transport, [provider]))
            }
        }
        return transports
    }

    var providers: Set<PushProvider> { Set(routes.keys) }

    func deliver(_ items: [OutboxItem]) throws -> [APNsResponse] {
        var responses = [APNsResponse](
            repeating: APNsResponse(status: 0, transportError: "this process does not send to that push service"),
            count: items.count)
        for (transport, providers) in transports {
            let chosen = items.indices.filter { providers.contains(items[$0].provider) }
            guard !chosen.isEmpty else { continue }
            for (index, response) in zip(chosen, try transport.deliver(chosen.map { items[$0] })) {
                responses[index] = response
            }
        }
        return responses
    }

    func idle() throws {
        for (transport, _) in transports { try transport.idle() }
    }
}

extension WebPushDelivery: PushTransport {
    var providers: Set<PushProvider> { [.webpush] }
}

extension FCMDelivery: PushTransport {
    var providers: Set<PushProvider> { [.fcm] }
}
