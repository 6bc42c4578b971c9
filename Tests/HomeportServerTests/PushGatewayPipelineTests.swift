import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportGateway
@testable import HomeportServer

private func device(_ number: Int) -> String {
    String(format: "%064x", 0x9b00 + number)
}

/// Push settings that send through the gateway at `url` with `credential`.
private func throughGateway(_ url: String, credential: String) -> PushSettings {
    var settings = PushSettings(topic: APNsStandIn.topic)
    settings.gateway = PushGatewaySettings(url: url, credential: credential)
    return settings
}

/// A sender of one push a batch over the server's outbox, through its own client of the
/// gateway (the application's own sender is stopped first).
private func batchesOfOne(
    _ server: AccountsHarness, _ settings: PushSettings, batchSize: Int? = 1, lease: Int64 = 60,
    pushesBytes: Int = PushGatewayClient.pushesBytes
) throws -> (PushSender, PushGatewayClient) {
    server.application.sender?.stop()
    let client = try PushGatewayClient(
        database: server.application.database, settings: try #require(settings.gateway), providers: [.apns],
        clock: server.clock, logger: Logger(label: "test", sink: MemoryLogSink()), pushesBytes: pushesBytes)
    let sender = try PushSender(
        database: server.application.database, transport: client, maximumAttempts: 8, clock: server.clock,
        logger: Logger(label: "test", sink: MemoryLogSink()), batchSize: batchSize, lease: lease)
    return (sender, client)
}

@Suite(
    "Through a push gateway, four batches are out at once; one the gateway has no room for goes again, not as a failure",
    .tags(.process, .interop))
struct PushGatewayPipelineTests {
    /// The names the stand-in holds Ada's devices' pushes under, in order.
    private static let holds = ["one", "two", "three", "four"]

    /// Ada's two devices (or `devices`, at most four), each push held at Apple until the test
    /// releases it (`one`, `two`, `three`, `four`), and a notification queued for them; `body` gets the
    /// server, the stand-in, and a sender of one push a batch through a gateway that allows the
    /// server `batchesPerServer`, started.
    private func twoHeld(
        devices: Int = 2, batchesPerServer: Int, lease: Int64 = 60,
        _ body: (AccountsHarness, APNsStandIn, PushGatewayClient) throws -> Void
    ) throws {
        let standIn = try APNsStandIn()
        try standIn.script(
            tokens: Dictionary(
                uniqueKeysWithValues: (1...devices).map { (device($0), [["status": 200, "hold": Self.holds[$0 - 1]]]) })
        )
        let gateway = try GatewayHarness(.sqlite, standIn: standIn, batchesPerServer: batchesPerServer)
        let credential = try SecretToken.generate()
        let settings = throughGateway("http://127.0.0.1:\(gateway.replicas[0].port)", credential: credential)
        try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
            let (sender, client) = try batchesOfOne(server, settings, lease: lease)
            try gateway.enroll("a", instanceID: server.instanceID, credential: credential)
            let ada = try server.signIn("ada@example.com")
            for number in 1...devices { #expect(try server.register(device(number), token: ada).status == 200) }
            try server.pushToAda()
            #expect(client.batchesInFlight == PushGatewayClient.batchesAtOnce)
            sender.start()
            defer { sender.stop() }
            try body(server, standIn, client)
        }
    }

    @Test(
        "a gateway still recording the server's last device changes sends nothing: the batch goes at the next pass, its attempt not counted"
    )
    func changesBusyIsNotSent() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let credential = try SecretToken.generate()
        let settings = throughGateway("http://127.0.0.1:\(gateway.replicas[0].port)", credential: credential)
        try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
            let (sender, _) = try batchesOfOne(server, settings, batchSize: nil)
            try gateway.enroll("a", instanceID: server.instanceID, credential: credential)
            let id = try #require(
                try GatewayServerStore(gateway.database).live(credentialHash: SecretToken.storedForm(of: credential))
            ).id
            // The gateway is busy with an earlier request of the server's device changes.
            let changes = gateway.replicas[0].changesInFlight
            #expect(changes.enter(id))
            let ada = try server.signIn("ada@example.com")
            #expect(try server.register(device(1), token: ada).status == 200)
            try server.pushToAda()
            sender.start()
            defer { sender.stop() }
            #expect(
                try eventually {
                    try server.outboxRows().first.map {
                        $0.string("last_error") == PushGatewayReason.notSent && $0.int("attempts") == 0
                    } == true
                }, "\((try? server.outboxRows())?.map { ($0.string("last_error"), $0.int("attempts")) } ?? [])")
            changes.leave(id)
            server.clock.advance(by: 2)
            #expect(try eventually { try server.outboxRows().isEmpty })
            #expect(standIn.requests().compactMap { $0["device"] as? String } == [device(1)])
        }
    }

    @Test("four batches of one server reach Apple through the gateway while none is answered")
    func fourOut() throws {
        try twoHeld(devices: 4, batchesPerServer: 4) { server, standIn, _ throws in
            // Fewer at once would wait for an answer before sending the fourth.
            #expect(eventually { Self.holds.allSatisfy(standIn.holds) }, "all four at Apple, unanswered")
            #expect(standIn.requests().isEmpty)
            for hold in Self.holds { standIn.release(hold) }
            #expect(try eventually { try server.outboxRows().isEmpty })
            #expect(standIn.requests().compactMap { $0["device"] as? String }.sorted() == (1...4).map(device))
        }
    }

    @Test(
        "a gateway that allows two batches a server answers the third 429: the server then sends two at once for a minute, not one"
    )
    func busyNarrowsToWhatWasTaken() throws {
        try twoHeld(devices: 3, batchesPerServer: 2) { server, standIn, client throws in
            // The barrier: two batches at Apple, and the third refused (it held no place).
            #expect(eventually { Self.holds.filter(standIn.holds).count == 2 })
            #expect(eventually { client.batchesInFlight == 2 }, "as many as the gateway took")
            #expect(Self.holds.filter(standIn.holds).count == 2, "the third did not reach Apple")
            #expect(try server.outboxRows().allSatisfy { $0.int(at: 1) == 0 }, "no attempt counted")
            for hold in Self.holds { standIn.release(hold) }
            #expect(try eventually { try server.outboxRows().isEmpty })
            #expect(standIn.requests().compactMap { $0["device"] as? String }.sorted() == (1...3).map(device))
            #expect(client.batchesInFlight == 2, "still two within the minute")
            server.clock.advance(by: 61)
            #expect(client.batchesInFlight == PushGatewayClient.batchesAtOnce, "a minute later, four again")
        }
    }

    @Test(
        "a batch posted alone and taken last is answered 429: the server narrows to the two out at the answer, not to the none out at the post"
    )
    func busyCountsAtTheAnswer() throws {
        let standIn = try APNsStandIn()
        try standIn.script(tokens: [
            device(1): [["status": 200]], device(2): [["status": 200, "hold": "one"]],
            device(3): [["status": 200, "hold": "two"]],
        ])
        let gateway = try GatewayHarness(.sqlite, standIn: standIn, batchesPerServer: 2)
        // The barrier: the first batch posted reaches the gateway after two posted after it.
        let relay = try RecordingListener(
            behaviour: .relay(port: gateway.replicas[0].port, fault: .holdsFirst(path: PushGatewayPath.pushes)))
        defer { relay.stop() }
        let credential = try SecretToken.generate()
        let settings = throughGateway(relay.url, credential: credential)
        try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
            let (_, client) = try batchesOfOne(server, settings)
            try gateway.enroll("a", instanceID: server.instanceID, credential: credential)
            let ada = try server.signIn("ada@example.com")
            for number in 1...3 { #expect(try server.register(device(number), token: ada).status == 200) }
            try client.idle()
            try server.pushToAda()
            let items = try server.application.database.transaction {
                try PushOutbox($0).claim("test", limit: 3, now: server.clock.unixSeconds, lease: 60, dialect: .sqlite)
            }.sorted { $0.deviceToken < $1.deviceToken }
            try #require(items.map(\.deviceToken) == (1...3).map(device))
            let answers = LockedBox([Int: [Int]]())
            let done = DispatchGroup()
            func deliver(_ index: Int) {
                done.enter()
                Thread.detachNewThread {
                    let statuses = (try? client.deliver([items[index]]))?.map(\.status) ?? []
                    answers.mutate { $0[index] = statuses }
                    done.leave()
                }
            }
            // Posted alone, then held before the gateway; the other two taken, each held at Apple.
            deliver(0)
            #expect(eventually { relay.holdsFirstRequest })
            deliver(1)
            #expect(eventually { standIn.holds("one") })
            deliver(2)
            #expect(eventually { standIn.holds("two") })
            // The first now reaches a gateway whose two places are the others': 429.
            #expect(relay.holdsFirstRequest)
            relay.releaseFirstRequest()
            #expect(eventually { client.batchesInFlight == 2 }, "as many as were out at the answer")
            standIn.release("one")
            standIn.release("two")
            #expect(done.wait(timeout: .now() + 30) == .success)
            #expect(answers.value.keys.sorted() == [0, 1, 2])
            #expect(answers.value.values.allSatisfy { $0 == [200] }, "\(answers.value)")
            #expect(standIn.requests().compactMap { $0["device"] as? String }.sorted() == (1...3).map(device))
            #expect(client.batchesInFlight == 2, "still two within the minute")
        }
    }

    @Test(
        "batches out longer than their lease are held for another while out: another sender takes none of them over"
    )
    func heldBatchesKeepTheirLease() throws {
        // A lease of 3 s: the sender holds its batches out every second.
        try twoHeld(batchesPerServer: 2, lease: 3) { server, standIn, _ throws in
            #expect(eventually { standIn.holds("one") && standIn.holds("two") })
            let claimedUntil = {
                try server.application.database.execute("SELECT claimed_until FROM push_outbox").compactMap {
                    $0.int(at: 0)
                }
            }
            // Ten seconds later on the server's clock: the claims made at its start ran out.
            server.clock.advance(by: 10)
            let now = server.clock.unixSeconds
            #expect(
                try eventually { try claimedUntil().count == 2 && claimedUntil().allSatisfy { $0 > now } },
                "held again while out")
            // Another replica's sender finds nothing due (its gateway is elsewhere: this one's two
            // threads are both held).
            let other = try PushSender(
                database: server.application.database,
                transport: try PushGatewayClient(
                    database: server.application.database,
                    settings: PushGatewaySettings(url: "http://127.0.0.1:9", credential: "unused"),
                    providers: [.apns], clock: server.clock, logger: Logger(label: "test", sink: MemoryLogSink())),
                maximumAttempts: 8, clock: server.clock, logger: Logger(label: "test", sink: MemoryLogSink()))
            #expect(try other.drainOnce() == 0)
            standIn.release("one")
            standIn.release("two")
            #expect(try eventually { try server.outboxRows().isEmpty })
            #expect(standIn.requests().count == 2, "each push once")
        }
    }

    @Test("a batch written larger than a request may be goes as two, each half again if need be")
    func largeBatchSplits() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let credential = try SecretToken.generate()
        let settings = throughGateway("http://127.0.0.1:\(gateway.replicas[0].port)", credential: credential)
        try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
            // About 450 bytes a push: three in one batch are written in two halves, then thirds.
            let (sender, _) = try batchesOfOne(server, settings, batchSize: nil, pushesBytes: 700)
            try gateway.enroll("a", instanceID: server.instanceID, credential: credential)
            let ada = try server.signIn("ada@example.com")
            for number in 1...3 { #expect(try server.register(device(number), token: ada).status == 200) }
            try server.pushToAda()
            #expect(try sender.drainOnce() == 3, "one batch")
            #expect(try server.outboxRows().isEmpty)
            #expect(standIn.waitForRequests(3))
            let batches = gateway.log.lines.filter { $0.contains("pushes forwarded") }
            #expect(batches.count == 3, "\(batches)")
        }
    }

    @Test(
        "a gateway that allows one batch a server answers the second 429: it goes again when the first ends, with no attempt counted"
    )
    func busyGoesAgain() throws {
        try twoHeld(batchesPerServer: 1) { server, standIn, client throws in
            #expect(eventually { standIn.holds("one") || standIn.holds("two") })
            // The barrier: the gateway refused the second batch (the first holds the server's one
            // place), and the client now sends one batch at a time.
            #expect(eventually { client.batchesInFlight == 1 }, "the gateway said it was busy")
            #expect(standIn.holds("one") != standIn.holds("two"), "one batch reached Apple, not both")
            #expect(try server.outboxRows().allSatisfy { $0.int(at: 1) == 0 }, "no attempt counted")
            standIn.release("one")
            standIn.release("two")
            // Both are delivered on this clock, which does not move: a batch failed and backed off
            // would wait for it.
            #expect(try eventually { try server.outboxRows().isEmpty })
            #expect(standIn.requests().compactMap { $0["device"] as? String }.sorted() == [device(1), device(2)])
            server.clock.advance(by: 61)
            #expect(client.batchesInFlight == PushGatewayClient.batchesAtOnce, "a minute later, four again")
        }
    }

    @Test(
        "while another replica holds the server's places, two refused batches wait Retry-After, not for each other's refusal"
    )
    func anotherReplicaHoldsThePlaces() throws {
        try twoHeld(batchesPerServer: 2) { server, standIn, first throws in
            // This replica's two batches hold the server's two places at the gateway, and its
            // sender waits for them (nothing else was due when it looked).
            #expect(eventually { standIn.holds("one") && standIn.holds("two") })
            let bob = try server.signIn("bob@example.com")
            for number in 3...4 { #expect(try server.register(device(number), token: bob).status == 200) }
            // Forwarded to the gateway by this replica, which holds the forwarding lease (another
            // replica's push to them would be answered unknown_device until then).
            try first.idle()
            try server.application.push.notify(
                ProductNotification(code: ServerCatalogue.testCode, title: "Hello"), email: "bob@example.com")
            // Another replica: its own sender and client, the same outbox and credential.
            let (other, client) = try batchesOfOne(
                server, throughGateway(first.settings.url, credential: first.settings.credential))
            other.start()
            defer { other.stop() }
            // The barrier: the gateway refused the other replica a place.
            #expect(eventually { client.batchesInFlight == 1 }, "the gateway said it was busy")
            // Each refusal told the other batch nothing: no place of this process's was freed.
            // Counted as freed, the two would go again at each other's refusal, use their three
            // tries in a few milliseconds and fail while the places are still held.
            Thread.sleep(forTimeInterval: 0.5)
            #expect(try server.outboxRows().allSatisfy { $0.int(at: 1) == 0 }, "no attempt counted")
            standIn.release("one")
            standIn.release("two")
            // Delivered on this clock, which does not move: a batch failed and backed off would
            // wait for it.
            #expect(try eventually { try server.outboxRows().isEmpty })
            #expect(
                standIn.requests().compactMap { $0["device"] as? String }.sorted() == (1...4).map(device),
                "each push once")
        }
    }

    @Test("device changes go to the gateway one exchange at a time: the second batch waits for the first's")
    func changesOneAtATime() throws {
        let release = DispatchSemaphore(value: 0)
        let changesOut = LockedBox(0)
        let mostChangesOut = LockedBox(0)
        // A gateway that holds its first device request until the test lets it go.
        let fake = try RecordingListener(
            behaviour: .answer { head in
                let json = ["Content-Type": "application/json"]
                if head.hasPrefix("POST \(PushGatewayPath.devices) ") {
                    let out = changesOut.mutate {
                        $0 += 1
                        return $0
                    }
                    mostChangesOut.mutate { $0 = max($0, out) }
                    if out == 1 { _ = release.wait(timeout: .now() + 20) }
                    changesOut.mutate { $0 -= 1 }
                    return RecordingListener.Canned(
                        200, json, #"{"registered":2,"removed":0,"ignored":0,"refused":[]}"#)
                }
                if head.hasPrefix("POST \(PushGatewayPath.pushes) ") {
                    return RecordingListener.Canned(200, json, #"{"results":[{"status":200}]}"#)
                }
                return RecordingListener.Canned(404, json, "{}")
            })
        defer { release.signal() }
        let settings = throughGateway(fake.url, credential: try SecretToken.generate())
        try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
            let (sender, _) = try batchesOfOne(server, settings)
            let ada = try server.signIn("ada@example.com")
            for number in 1...2 { #expect(try server.register(device(number), token: ada).status == 200) }
            try server.pushToAda()
            sender.start()
            defer { sender.stop() }
            // The first batch's exchange sends the two registrations and is held; the second batch
            // is claimed and on its way.
            #expect(eventually { changesOut.value == 1 })
            let states = {
                try server.application.database.execute("SELECT state FROM push_outbox").map { $0.string(at: 0) }
            }
            #expect(try eventually { try states() == ["sending", "sending"] })
            // Sent beside it, the same registrations could land after a removal sent later.
            Thread.sleep(forTimeInterval: 1)
            #expect(mostChangesOut.value == 1)
            release.signal()
            #expect(try eventually { try server.outboxRows().isEmpty })
            #expect(mostChangesOut.value == 1)
            let sent = fake.received.map { String(decoding: $0, as: UTF8.self) }
                .filter { $0.hasPrefix("POST \(PushGatewayPath.devices) ") }
            #expect(sent.count == 1, "the registrations went once: \(sent.count) device requests")
            #expect(sent.first.map { $0.contains(device(1)) && $0.contains(device(2)) } == true)
        }
    }

    @Test(
        "batches through the gateway carry up to 1,000 pushes, four at once; beside a direct push service, 500 one at a time"
    )
    func batchShapes() throws {
        let settings = throughGateway("http://127.0.0.1:9", credential: try SecretToken.generate())
        try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
            let (_, client) = try batchesOfOne(server, settings)
            #expect((client.batchSize, client.batchesInFlight) == (GatewayPushBatch.maximumCount, 4))
            let alone = PushDispatch([.apns: client, .fcm: client])
            #expect((alone.batchSize, alone.batchesInFlight) == (1000, 4), "every kind through the gateway")
            let web = try WebPushDelivery(
                settings: try #require(try webPushSettings().webPush), clock: server.clock,
                logger: Logger(label: "test", sink: MemoryLogSink()))
            let mixed = PushDispatch([.apns: client, .webpush: web])
            #expect(
                (mixed.batchSize, mixed.batchesInFlight) == (500, 1),
                "Web Push sent by the server itself gets its part of every batch, one batch at a time")
        }
    }

    @Test(
        "a gateway process whose APNs host closes, then resets, the connection mid-batch lives on and answers every push unsent"
    )
    func gatewayOutlivesDroppedConnections() throws {
        let dropper = try DroppingTLSPeer()
        let data = try TemporaryDirectory()
        defer { data.remove() }
        let database = "sqlite:" + data.file("gateway.sqlite")
        let gateway = try ServerProcess(
            command: ["gateway", "serve"],
            serve: [
                "--database", database, "--apns-topic", APNsStandIn.topic, "--apns-key-file", dropper.keyFile,
                "--apns-key-id", APNsStandIn.keyID, "--apns-team-id", APNsStandIn.teamID, "--apns-base-url",
                dropper.url, "--apns-ca-file", dropper.caFile,
            ])
        defer { gateway.stop() }
        // Enrolled as `gateway servers add` would, after reading them from the server's address.
        let credential = try SecretToken.generate()
        let instance = UUID().uuidString.lowercased()
        let opened = try DatabaseURL(parsing: database).open()
        defer { opened.close() }
        _ = try GatewayServerStore(opened).add(
            name: "home", instanceID: instance, url: "https://home.example.net",
            credentialHash: SecretToken.storedForm(of: credential), now: 0)
        let headers = [("Content-Type", "application/json"), ("Authorization", "Bearer \(credential)")]
        let devices = (1...700).map { device($0) }
        let registered = try RawHTTP.request(
            port: gateway.port, method: "POST", path: PushGatewayPath.devices, headers: headers,
            body: try JSONSerialization.data(withJSONObject: [
                "register": devices.map { ["token": $0, "environment": "production"] }, "remove": [],
            ]))
        #expect(registered.status == 200)
        let payload = #"{"aps":{"alert":{"title":"Hi"}},"homeport":{"c":"homeport/core:test","s":"\#(instance)"}}"#
        // A batch of 700 on the first connection, which the host closes after its first kilobyte;
        // the next on the second, which it resets.
        for connection in ["closed", "reset"] {
            let answer = try RawHTTP.request(
                port: gateway.port, method: "POST", path: PushGatewayPath.pushes, headers: headers,
                body: try JSONSerialization.data(withJSONObject: [
                    "pushes": devices.map {
                        [
                            "apnsId": UUID().uuidString.lowercased(), "deviceToken": $0, "environment": "production",
                            "topic": APNsStandIn.topic, "payload": payload, "priority": 10, "expiration": 0,
                        ]
                    }
                ]))
            let results = answer.jsonObject?["results"] as? [[String: Any]] ?? []
            #expect(answer.status == 200, "\(connection): \(answer.status)")
            #expect(results.count == 700 && results.allSatisfy { $0["status"] as? Int == 0 }, "\(connection)")
            #expect(gateway.isRunning, "\(connection): \(gateway.standardError.suffix(500))")
        }
    }
}
