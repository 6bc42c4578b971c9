import Foundation

/// Something to tell the person, shown as an alert: what happened, and what they can do.
public struct Notice: Equatable, Sendable {
    /// What happened, in a sentence.
    public var title: String
    /// What the person can do about it, when there is something.
    public var advice: String?

    /// A notice of its own words.
    public init(_ title: String, advice: String? = nil) {
        self.title = title
        self.advice = advice
    }

    /// A notice of an error: HomeportClient's errors are `LocalizedError`s written for an app's
    /// user, so their description and recovery suggestion are shown as they are.
    public init(_ error: any Error) {
        let localized = error as? any LocalizedError
        title = localized?.errorDescription ?? error.localizedDescription
        advice = localized?.recoverySuggestion
    }
}
