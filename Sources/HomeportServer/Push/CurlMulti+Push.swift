import HomeportAPNs
import HomeportCurl

extension CurlMulti {
    /// Sends the `ready` requests and puts the sender's view of each answer at its index in
    /// `responses`: the push service's answer as `reading` takes it, or no answer (status 0),
    /// to go again.
    func send(
        _ ready: [(index: Int, request: Request)], deadline: ContinuousClock.Instant,
        into responses: inout [APNsResponse], reading: (CurlSession.Answer) -> APNsResponse
    ) {
        for ((index, _), result) in zip(ready, perform(ready.map(\.request), deadline: deadline)) {
            switch result {
            case .failure(let failure): responses[index] = APNsResponse(status: 0, transportError: failure.description)
            case .success(let answer): responses[index] = reading(answer)
            }
        }
    }
}
