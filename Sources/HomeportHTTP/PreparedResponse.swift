import CMicroHTTPD
import Foundation
import Synchronization

/// An answer sent many times exactly as it is (forward auth's answer for one session): the
/// server copies its header fields and body into libmicrohttpd once, at its first sending, and
/// queues that same copy for every later request (libmicrohttpd counts a response's users, so
/// one copy can be on many connections at once).
///
/// A route returns ``response``. The server sends the prepared copy only when the answer that
/// reaches it, after every middleware, still has the status, header fields and body it was
/// prepared with, and the connection is not closing; any other answer is built afresh, as
/// every answer is. Prepare the answer as the middleware will leave it (say, with
/// `Cache-Control: no-store` under the API prefix), or it is never sent prepared.
package final class PreparedResponse: Sendable {
    /// The answer, as the route gives it.
    package let answer: HTTPResponse
    /// libmicrohttpd's copy without `Strict-Transport-Security` (plain HTTP) and with it (HTTPS),
    /// each built at its first use; 0 until then.
    private let plainCopy = Atomic<UInt>(0)
    private let strictTransportCopy = Atomic<UInt>(0)

    /// Prepares `answer`, which must have a body rather than a stream.
    package init(_ answer: HTTPResponse) {
        precondition(answer.stream == nil, "a streamed answer cannot be prepared")
        self.answer = answer
    }

    /// The answer to return from a handler: ``answer``, carrying this preparation.
    package var response: HTTPResponse {
        var response = answer
        response.prepared = self
        return response
    }

    /// libmicrohttpd's copy of `response`, if it is still this answer; built on first use.
    /// `strictTransport` adds the header field HTTPS answers carry. The caller keeps `self`
    /// alive until the copy is queued.
    package func copy(for response: HTTPResponse, strictTransport: Bool) -> OpaquePointer? {
        guard response.stream == nil, response.status == answer.status, response.body == answer.body,
            response.headers.hasSameFields(as: answer.headers)
        else { return nil }
        return strictTransport
            ? copy(in: strictTransportCopy, strictTransport: true) : copy(in: plainCopy, strictTransport: false)
    }

    private func copy(in slot: borrowing Atomic<UInt>, strictTransport: Bool) -> OpaquePointer? {
        if let copy = OpaquePointer(bitPattern: slot.load(ordering: .acquiring)) { return copy }
        guard let made = answer.libraryBuffer(strictTransport: strictTransport, closing: false) else { return nil }
        let (stored, present) = slot.compareExchange(
            expected: 0, desired: UInt(bitPattern: made), ordering: .acquiringAndReleasing)
        if stored { return made }
        // Another thread built it first: its copy serves, this one goes.
        MHD_destroy_response(made)
        return OpaquePointer(bitPattern: present)
    }

    deinit {
        // Connections still sending a copy hold their own count of it.
        for bits in [plainCopy.load(ordering: .acquiring), strictTransportCopy.load(ordering: .acquiring)] {
            if let copy = OpaquePointer(bitPattern: bits) { MHD_destroy_response(copy) }
        }
    }
}
