import Foundation
import HomeportAPNs
import Testing

@testable import HomeportServer

@Suite("APNs requests from outbox rows: a repeated payload shares its bytes, each request keeps its own")
struct APNsRequestBatchTests {
    private func item(_ index: Int, payload: String, sandbox: Bool = false, collapse: String? = nil) -> OutboxItem {
        OutboxItem(
            apnsID: "00000000-0000-4000-8000-\(String(format: "%012d", index))",
            deviceToken: String(format: "%064x", index), environment: sandbox ? .sandbox : .production,
            topic: "net.example.books", payload: payload, collapseID: collapse,
            priority: index.isMultiple(of: 2) ? 10 : 5,
            expiration: Int64(1_800_000_000 + index), provider: .apns, webPush: nil, fcmToken: nil)
    }

    @Test("every request carries its own row's payload and fields, in order, whatever the row before held")
    func eachRowItsOwn() {
        let first = #"{"aps":{"alert":{"title":"One"}},"homeport":{"s":"a"}}"#
        let second = #"{"aps":{"alert":{"title":"Two"}},"homeport":{"s":"a"}}"#
        // The same text again, read separately (another string's storage), as rows read from a database are.
        let firstAgain = String(decoding: Array(first.utf8), as: UTF8.self)
        // Two spellings Unicode counts as one (`==` holds), with other bytes: U+00C5 and U+212B.
        let precomposed = #"{"aps":{"alert":{"title":"\#u{00C5}"}}}"#
        let angstrom = #"{"aps":{"alert":{"title":"\#u{212B}"}}}"#
        #expect(precomposed == angstrom && Array(precomposed.utf8) != Array(angstrom.utf8))
        let items = [
            item(0, payload: first), item(1, payload: first), item(2, payload: second, sandbox: true, collapse: "c"),
            item(3, payload: firstAgain), item(4, payload: ""), item(5, payload: second),
            item(6, payload: precomposed), item(7, payload: angstrom), item(8, payload: precomposed),
        ]
        let requests = APNsRequest.batch(items)
        #expect(requests.count == items.count)
        for (request, item) in zip(requests, items) {
            #expect(request.payload == Data(item.payload.utf8), "row \(item.apnsID)")
            #expect(request.apnsID == item.apnsID && request.deviceToken == item.deviceToken)
            #expect(request.topic == item.topic && request.expiration == item.expiration)
            #expect(request.priority.rawValue == item.priority)
            #expect(request.collapseID == item.collapseID)
            #expect(request.environment == (item.environment == .sandbox ? .sandbox : .production))
        }
        #expect(APNsRequest.batch([]).isEmpty)
    }
}
