import Foundation
import HomeportAPNs
import HomeportLogging
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportGateway
@testable import HomeportServer

/// A transport whose first push was never started (its batch ran out of time) and whose
/// others were started and got no answer.
private final class FirstUnstarted: PushTransport {
    func deliver(_ items: [OutboxItem]) throws -> [APNsResponse] {
        items.indices.map { index in
            index == 0
                ? .notSent("not sent: the batch ran out of time") : APNsResponse(status: 0, transportError: "timed out")
        }
    }
}

@Suite("A push never started goes again without counting as an attempt", .tags(.postgres))
struct PushNotSentTests {
    @Test(
        "never started: pending again at the next pass, attempts unchanged; started and unanswered: one attempt",
        arguments: Backend.allCases)
    func notCounted(backend: Backend) throws {
        let devices = [String(repeating: "a", count: 64), String(repeating: "b", count: 64)]
        try withAccounts(backend, push: PushSettings(topic: "net.example.books")) { server in
            server.application.sender?.stop()
            let ada = try server.signIn("ada@example.com")
            for device in devices { #expect(try server.register(device, token: ada).status == 200) }
            try server.application.push.notify(
                ProductNotification(code: ServerCatalogue.testCode, title: "Hello"), email: "ada@example.com")
            let sender = try PushSender(
                database: server.application.database, transport: FirstUnstarted(), maximumAttempts: 8,
                clock: server.clock, logger: Logger(label: "test", sink: MemoryLogSink()), batchSize: 10)
            #expect(try sender.drainOnce() == 2)
            let rows = try server.application.database.execute(
                "SELECT state, attempts, next_attempt_at, last_error FROM push_outbox ORDER BY id")
            #expect(rows.map { $0.string(at: 0) } == ["pending", "pending"])
            #expect(rows.map { $0.int(at: 1) } == [0, 1], "\(rows)")
            #expect(rows.first?.int(at: 2) == server.clock.unixSeconds + 1, "at the next pass")
            #expect(rows.first?.string(at: 3) == PushGatewayReason.notSent)
        }
    }

    @Test("through a gateway, a push it never started comes back as NotSent, status 0")
    func throughTheGateway() {
        let outcome = GatewayHandlers.outcome(.notSent("not sent"), provider: .webpush)
        #expect(outcome.status == 0 && outcome.reason == PushGatewayReason.notSent)
        let started = GatewayHandlers.outcome(APNsResponse(status: 0, transportError: "timed out"), provider: .webpush)
        #expect(started.reason == nil)
    }
}
