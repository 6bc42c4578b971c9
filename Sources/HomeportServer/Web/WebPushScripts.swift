/// The scripts of "Notifications in this browser" (``WebDoor/notificationsPage(_:)``), served
/// from this origin only (the page's policy allows no other script, and no inline one).
enum WebPushScripts {
    /// The page's script: registers the service worker, subscribes with the server's VAPID key
    /// (the section's `data-key`) and posts the subscription with the form's CSRF token; turning
    /// off posts its removal and unsubscribes. Every failure is said on the page, in words.
    static let page = #"""
        "use strict";
        (function () {
          const section = document.getElementById("browser-notifications");
          const status = document.getElementById("notifications-status");
          const say = (text) => { status.textContent = text; };
          const scope = "/account/";

          function keyBytes(text) {
            const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4);
            return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
          }

          async function post(path, fields) {
            const body = new URLSearchParams({ csrf_token: section.dataset.csrf, website: "", ...fields });
            const answer = await fetch(path, { method: "POST", body, credentials: "same-origin" });
            if (!answer.ok) {
              let message = `The server refused it (${answer.status}).`;
              try { message = (await answer.json()).error.message; } catch (ignored) {}
              throw new Error(message);
            }
          }

          async function turnOn() {
            if (!("serviceWorker" in navigator) || !("PushManager" in window)) {
              throw new Error("This browser cannot take notifications from a web page.");
            }
            if ((await Notification.requestPermission()) !== "granted") {
              throw new Error("Notifications are blocked for this site in the browser's settings.");
            }
            say("Subscribing…");
            await navigator.serviceWorker.register("/account/push-worker.js", { scope });
            const registration = await navigator.serviceWorker.ready;
            let subscription;
            try {
              // A browser that cannot reach its push service may never answer: give up after 10 s.
              const silence = new Promise((_, fail) =>
                setTimeout(() => fail(new Error("it did not answer in 10 seconds")), 10000));
              subscription = await Promise.race([
                registration.pushManager.subscribe({
                  userVisibleOnly: true, applicationServerKey: keyBytes(section.dataset.key),
                }),
                silence,
              ]);
            } catch (error) {
              throw new Error(`This browser's push service could not be reached: ${error.message}`);
            }
            const json = subscription.toJSON();
            await post("/account/notifications", { endpoint: json.endpoint, p256dh: json.keys.p256dh, auth: json.keys.auth });
            say("Notifications are on in this browser.");
          }

          async function turnOff() {
            const registration = await navigator.serviceWorker.getRegistration(scope);
            const subscription = registration && (await registration.pushManager.getSubscription());
            if (subscription) {
              await post("/account/notifications/remove", { endpoint: subscription.endpoint });
              await subscription.unsubscribe();
            }
            say("Notifications are off in this browser.");
          }

          for (const [id, action] of [["notifications-on", turnOn], ["notifications-off", turnOff]]) {
            document.getElementById(id).addEventListener("click", () => action().catch((error) => say(error.message)));
          }
          if ("serviceWorker" in navigator) {
            navigator.serviceWorker.addEventListener("message", (event) => {
              if (event.data && event.data.kind === "homeport-notification") {
                document.getElementById("notifications-last").textContent = `Last notification: ${event.data.title}`;
              }
            });
          }
        })();
        """#

    /// The service worker: shows each push (the JSON an iPhone gets: `aps.alert`, its
    /// `thread-id` as the tag, so a newer one in a thread replaces the older) and tells open pages
    /// of it; a click opens the account.
    static let worker = #"""
        "use strict";
        self.addEventListener("push", (event) => {
          let payload = {};
          try { payload = event.data ? event.data.json() : {}; } catch (ignored) {}
          const aps = payload.aps || {};
          const alert = aps.alert && typeof aps.alert === "object" ? aps.alert : { title: String(aps.alert || "") };
          const title = alert.title || "New notification";
          const options = { body: alert.body || "", data: { url: "/account" } };
          if (typeof aps["thread-id"] === "string") { options.tag = aps["thread-id"]; }
          event.waitUntil(Promise.allSettled([
            self.registration.showNotification(title, options),
            self.clients.matchAll({ type: "window", includeUncontrolled: true }).then((pages) => {
              for (const page of pages) { page.postMessage({ kind: "homeport-notification", title }); }
            }),
          ]));
        });
        self.addEventListener("notificationclick", (event) => {
          event.notification.close();
          event.waitUntil(self.clients.openWindow(event.notification.data.url));
        });
        """#
}
