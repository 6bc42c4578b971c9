import HomeportAPNs
import HomeportCurl
import HomeportWire

extension CurlMulti {
    /// Sends the `ready` requests and puts the sender's view of each answer at its index in
    /// `responses`: the push service's answer as `reading` takes it, or no answer (status 0),
    /// to go again; a request never started is ``APNsResponse/notSent(_:)``.
    func send(
        _ ready: [(index: Int, request: Request)], deadline: ContinuousClock.Instant,
        into responses: inout [APNsResponse], reading: (CurlSession.Answer) -> APNsResponse
    ) {
        for ((index, _), result) in zip(ready, perform(ready.map(\.request), deadline: deadline)) {
            switch result {
            case .failure(let failure) where !failure.started: responses[index] = .notSent(failure.description)
            case .failure(let failure): responses[index] = APNsResponse(status: 0, transportError: failure.description)
            case .success(let answer): responses[index] = reading(answer)
            }
        }
    }
}

extension APNsResponse {
    /// A push that was never started (its batch's time ran out behind slow push services): the
    /// sender tries it again without counting an attempt, since it was never the push's fault.
    /// Through a gateway, its outcome says ``PushGatewayReason/notSent``.
    static func notSent(_ why: String) -> APNsResponse {
        APNsResponse(status: 0, reason: APNsReason(rawValue: PushGatewayReason.notSent), transportError: why)
    }

    /// Whether the push was never started.
    var wasNotSent: Bool { status == 0 && reason?.rawValue == PushGatewayReason.notSent }
}
