import Foundation
import Testing

@testable import HomeportAPNs

@Suite("APNs requests and answers, typed")
struct APNsMessageTests {
    @Test("each answer becomes what a sender does about it; a reason Apple adds later is kept as sent")
    func outcomes() {
        let cases: [(APNsResponse, APNsOutcome)] = [
            (APNsResponse(status: 200), .delivered),
            (
                APNsResponse(status: 410, reason: .unregistered, timestamp: 1_800_000_000_123),
                .unregistered(since: 1_800_000_000)
            ),
            (APNsResponse(status: 400, reason: .badDeviceToken), .badDevice),
            (APNsResponse(status: 400, reason: .deviceTokenNotForTopic), .badDevice),
            (APNsResponse(status: 403, reason: .expiredProviderToken), .providerTokenRejected),
            (APNsResponse(status: 403, reason: .invalidProviderToken), .giveUp),
            (APNsResponse(status: 0, transportError: "connection refused"), .retry),
            (APNsResponse(status: 429, reason: .tooManyRequests), .retry),
            (APNsResponse(status: 500, reason: .internalServerError), .retry),
            (APNsResponse(status: 503, reason: .serviceUnavailable), .retry),
            (APNsResponse(status: 413, reason: .payloadTooLarge), .giveUp),
            (APNsResponse(status: 400, reason: APNsReason(rawValue: "SomethingNew")), .giveUp),
        ]
        for (response, outcome) in cases {
            #expect(response.outcome == outcome, "\(response)")
        }
        let unknown = APNsReason(rawValue: "SomethingNew")
        #expect(unknown.rawValue == "SomethingNew" && unknown.description == "SomethingNew")
        #expect(APNsReason(rawValue: "BadDeviceToken") == .badDeviceToken, "Apple's spelling is the value")
    }

    @Test("the header values are Apple's spellings; a request defaults to an alert sent at once")
    func headerValues() {
        #expect(APNsPriority.immediate.rawValue == 10 && APNsPriority.considerate.rawValue == 5)
        #expect(APNsPriority.low.rawValue == 1 && APNsPriority(rawValue: 7) == nil)
        #expect(APNsPushType.alert.rawValue == "alert" && APNsPushType(rawValue: "liveactivity") == .liveactivity)
        #expect(APNsEnvironment(rawValue: "sandbox") == .sandbox && APNsEnvironment(rawValue: "development") == nil)
        let request = APNsRequest(
            apnsID: "d6a1a6c1-5f8e-4d0c-9a55-3d3f8c1f2a10", deviceToken: "ab", topic: "net.example.app",
            payload: Data(), expiration: 0, environment: .sandbox)
        #expect(request.priority == .immediate && request.pushType == .alert && request.environment == .sandbox)
    }

    @Test("a request's numbers are laid out in decimal, as String writes them, at every width and sign")
    func numberFields() {
        let expirations: [Int64] = [0, 9, 10, 99, 100, 1_765_000_000, .max, -1, -10, .min]
        for (index, expiration) in expirations.enumerated() {
            let payload = Data(repeating: UInt8(ascii: "x"), count: [0, 7, 10, 4096][index % 4])
            let priority: APNsPriority = index % 2 == 0 ? .immediate : .considerate
            var block = HTTP2Session.FieldBlock()
            APNsClient.fields(
                of: APNsRequest(
                    apnsID: "d6a1a6c1-5f8e-4d0c-9a55-3d3f8c1f2a10", deviceToken: "ab", topic: "t", payload: payload,
                    priority: priority, expiration: expiration, environment: .production),
                into: &block)
            // Names and values lie back to back, in the order they are laid out.
            let text = String(decoding: block.bytes, as: UTF8.self)
            let expected =
                "apns-priority\(priority.rawValue)apns-expiration\(expiration)content-length\(payload.count)"
            #expect(text.hasSuffix(expected), "\(text)")
        }
    }
}
