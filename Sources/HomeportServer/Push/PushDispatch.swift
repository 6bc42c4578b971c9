import Dispatch
import HomeportAPNs
import HomeportWire
import Synchronization

/// One transport over every push service a process sends to: each item goes to its service's
/// transport (APNs itself or a push gateway; ``WebPushDelivery``; ``FCMDelivery``; a gateway may
/// carry all three, and gets them in one batch). The sender's, and a push gateway's.
/// The transport that carries APNs goes first: a transport that throws has then sent nothing of
/// the batch, so the rows that wait out their lease and go again were not delivered already. The
/// others then go side by side, so a slow push service does not hold the next one's turn.
package final class PushDispatch: PushTransport {
    /// Each push service's transport.
    private let routes: [PushProvider: any PushTransport]

    init(_ routes: [PushProvider: any PushTransport]) {
        self.routes = routes
    }

    /// A push gateway's: Apple's with the app's key, and FCM and Web Push when it holds theirs.
    package convenience init(apns: APNsDelivery, webPush: WebPushDelivery?, fcm: FCMDelivery?) {
        var routes: [PushProvider: any PushTransport] = [.apns: apns]
        if let webPush { routes[.webpush] = webPush }
        if let fcm { routes[.fcm] = fcm }
        self.init(routes)
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

    package var providers: Set<PushProvider> { Set(routes.keys) }

    /// What every one of its transports takes: they get parts of the same batches.
    var batchesInFlight: Int { transports.map(\.transport.batchesInFlight).min() ?? 1 }
    var batchSize: Int { transports.map(\.transport.batchSize).min() ?? 500 }

    package func deliver(_ items: [OutboxItem]) throws -> [APNsResponse] {
        var responses = [APNsResponse](
            repeating: APNsResponse(status: 0, transportError: "this process does not send to that push service"),
            count: items.count)
        let rounds = transports.compactMap { transport, providers -> (any PushTransport, [Int])? in
            let chosen = items.indices.filter { providers.contains(items[$0].provider) }
            return chosen.isEmpty ? nil : (transport, chosen)
        }
        guard let (first, chosen) = rounds.first else { return responses }
        let apple = rounds.first?.1.contains { items[$0].provider == .apns } == true
        let sideBySide = apple ? Array(rounds.dropFirst()) : rounds
        if apple {
            // Most batches are Apple's alone: handed on whole, not copied item by item.
            let taken = chosen.count == items.count ? items : chosen.map { items[$0] }
            for (index, response) in zip(chosen, try first.deliver(taken)) {
                responses[index] = response
            }
        }
        let answers = Mutex([Result<[APNsResponse], any Error>](repeating: .success([]), count: sideBySide.count))
        DispatchQueue.concurrentPerform(iterations: sideBySide.count) { round in
            let (transport, chosen) = sideBySide[round]
            let sent = Result { try transport.deliver(chosen.map { items[$0] }) }
            answers.withLock { $0[round] = sent }
        }
        for ((_, chosen), sent) in zip(sideBySide, answers.withLock { $0 }) {
            for (index, response) in zip(chosen, try sent.get()) { responses[index] = response }
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
