import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportTestSupport
import Testing

@Suite("A batch of pushes on one HTTP/2 connection", .tags(.process, .interop))
struct APNsBatchTests {
    /// A provider token the stand-in takes: its key, its key id and team, issued now.
    private static func token(for standIn: APNsStandIn) throws -> ProviderToken {
        try ProviderToken.mint(
            key: try ES256Key(pem: try String(contentsOfFile: standIn.keyFile, encoding: .utf8)),
            keyID: APNsStandIn.keyID, teamID: APNsStandIn.teamID, issuedAt: Int64(Date().timeIntervalSince1970))
    }

    @Test(
        "a batch larger than one write reaches APNs whole, twice on one connection: each request with its own fields, none with another's"
    )
    func largeBatches() throws {
        let standIn = try APNsStandIn()
        let token = try Self.token(for: standIn)
        let client = APNsClient(
            configuration: .init(productionURL: standIn.url, sandboxURL: standIn.url, caFile: standIn.caFile))
        // 700 requests are over 100 KiB of frames: more than one write of the sender's.
        let count = 700
        func batch(_ round: Int) -> [APNsRequest] {
            (0..<count).map { (index: Int) -> APNsRequest in
                let body: String = #"{"aps":{"alert":{"title":"n\#(index)"}},"i":\#(index)}"#
                let priority: APNsPriority = index % 3 == 0 ? .considerate : .immediate
                let collapse: String? = index % 2 == 1 ? "c\(index)" : nil
                return APNsRequest(
                    apnsID: UUID().uuidString.lowercased(), deviceToken: String(format: "%064x", round * count + index),
                    topic: APNsStandIn.topic, payload: Data(body.utf8), priority: priority,
                    expiration: Int64(index), collapseID: collapse, environment: .production)
            }
        }
        var sent: [String: APNsRequest] = [:]
        for round in 0..<2 {
            let requests = batch(round)
            let answers = client.send(requests, authorization: token.jwt)
            let outcomes = Dictionary(grouping: answers) { "\($0.status) \($0.transportError ?? "")" }.mapValues(
                \.count)
            #expect(outcomes == ["200 ": count], "round \(round)")
            for request in requests { sent[request.apnsID] = request }
        }
        #expect(standIn.waitForRequests(2 * count))
        let received = standIn.requests()
        #expect(received.count == 2 * count)
        var seen = Set<String>()
        for record in received {
            guard let id = record["apns_id"] as? String, let request = sent[id] else {
                Issue.record("a request that was not sent, or without its apns-id: \(record)")
                continue
            }
            #expect(seen.insert(id).inserted, "each once")
            #expect(record["device"] as? String == request.deviceToken)
            #expect(record["jwt"] as? String == token.jwt)
            #expect(record["priority"] as? String == String(request.priority.rawValue))
            #expect(record["expiration"] as? String == String(request.expiration))
            #expect((record["collapse_id"] as? String) == request.collapseID, "no collapse id from another request")
            // The expiration is the request's index in its batch, as its body's "i" is.
            #expect(
                (record["payload"] as? [String: Any])?["i"] as? Int == Int(request.expiration),
                "its own body: \(record)")
        }
    }

    @Test(
        "a batch that mixes production and sandbox devices: each goes on its own host's connection, and each answer comes back to its own request"
    )
    func twoHosts() throws {
        let standIn = try APNsStandIn()
        let token = try Self.token(for: standIn)
        // One stand-in under two names: two hosts to the client, each with a connection of its own.
        let client = APNsClient(
            configuration: .init(
                productionURL: standIn.url, sandboxURL: "https://localhost:\(standIn.port)", caFile: standIn.caFile))
        let requests = (0..<60).map { (index: Int) -> APNsRequest in
            APNsRequest(
                apnsID: UUID().uuidString.lowercased(), deviceToken: String(format: "%064x", index + 1),
                topic: APNsStandIn.topic, payload: Data(#"{"aps":{"alert":{"title":"n"}},"i":\#(index + 100)}"#.utf8),
                expiration: Int64(index + 100), collapseID: index % 2 == 0 ? "c\(index)" : nil,
                environment: index % 3 == 0 ? .sandbox : .production)
        }
        // Every sandbox device is gone, every production one takes its push: an answer given to
        // another request than its own shows as the wrong status.
        let sandbox = requests.filter { $0.environment == .sandbox }
        try standIn.script(
            tokens: Dictionary(
                uniqueKeysWithValues: sandbox.map {
                    ($0.deviceToken, [["status": 410, "reason": "Unregistered", "timestamp": 1_700_000_000_000]])
                }))
        let answers = client.send(requests, authorization: token.jwt)
        #expect(answers.count == requests.count)
        for (request, answer) in zip(requests, answers) {
            #expect(answer.status == (request.environment == .sandbox ? 410 : 200), "\(request.deviceToken)")
        }
        #expect(standIn.waitForRequests(requests.count))
        let received = standIn.requests()
        let byConnection = Dictionary(grouping: received) { $0["client_port"] as? Int ?? 0 }.mapValues {
            Set($0.compactMap { $0["device"] as? String })
        }
        #expect(byConnection.count == 2, "one connection per host")
        #expect(
            Set(byConnection.values) == [
                Set(sandbox.map(\.deviceToken)),
                Set(requests.filter { $0.environment == .production }.map(\.deviceToken)),
            ])
        for record in received {
            let request = requests.first { $0.deviceToken == record["device"] as? String }
            #expect(record["apns_id"] as? String == request?.apnsID, "each request with its own fields")
            #expect(record["expiration"] as? String == request.map { String($0.expiration) })
            #expect((record["collapse_id"] as? String) == request?.collapseID)
            // Every body is as long as the others (no length tells them apart): its own "i".
            #expect((record["payload"] as? [String: Any])?["i"] as? Int == request.map { Int($0.expiration) })
        }
    }

    @Test(
        "a host that closes or resets the connection while a batch goes out: every request is answered as failed, none with a status"
    )
    func droppedMidBatch() throws {
        let dropper = try DroppingTLSPeer()
        let client = APNsClient(
            configuration: .init(
                productionURL: dropper.url, sandboxURL: dropper.url, caFile: dropper.caFile, timeoutSeconds: 10))
        // 700 requests are many slices: the reset reaches the sender while it still submits.
        let requests = (0..<700).map { index in
            APNsRequest(
                apnsID: UUID().uuidString.lowercased(), deviceToken: String(format: "%064x", index),
                topic: APNsStandIn.topic, payload: Data(#"{"aps":{"alert":{"title":"t"}}}"#.utf8), expiration: 0,
                environment: .production)
        }
        // Twice: the host closes the first connection and resets the second, made for the second
        // batch. (A write to the closed one would raise SIGPIPE, which this test process ignores:
        // PushSenderTests.hostGoesAwayMidBatch is the test that sees it, in a server process.)
        for round in 0..<2 {
            let answers = client.send(requests, authorization: "not-a-real-token")
            #expect(answers.count == requests.count)
            let outcomes = Dictionary(grouping: answers) { "\($0.status) \($0.transportError ?? "no error")" }
                .mapValues(\.count)
            #expect(
                answers.allSatisfy { $0.status == 0 && $0.transportError != nil },
                "round \(round): \(outcomes)")
        }
    }
}
