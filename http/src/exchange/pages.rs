//! The exchange's side of error pages (`crate::error_page`): where a
//! response's head is written, the request's table is asked for a page.

use std::rc::Rc;

use super::{shorten, Exchange};
use crate::error::Error;
use crate::error_page::{self, ErrorPages, Page};

impl Exchange<'_> {
    /// Sets the pages that stand in for this request's error responses.
    pub fn set_error_pages(&mut self, pages: Rc<dyn ErrorPages>) {
        self.pages = Some(pages);
    }

    /// The page for an error of `status`; `relayed`: for a response from
    /// another server, which only an intercepting table replaces.
    pub(super) fn error_page(&self, status: u16, relayed: bool) -> Option<Page> {
        let p = self.pages.as_ref().filter(|_| status >= 400)?;
        (!relayed || p.intercepts())
            .then(|| p.page(status))
            .flatten()
    }

    /// Answers with `page` in place of an error; the table goes first, so
    /// the page is never looked up for itself. A relayed error keeps only
    /// the fields the client acts on, its body is read and dropped, and a
    /// cache's capture keeps nothing: the page is never stored as the
    /// upstream's response, nor streamed to requests waiting on it.
    pub(super) fn send_page<'h>(
        &mut self,
        page: Page,
        headers: impl Iterator<Item = (&'h [u8], &'h [u8])>,
        relayed: bool,
    ) -> Result<(), Error> {
        self.pages = None;
        if let Some(c) = self.capture.as_mut().filter(|_| relayed) {
            (c.sink, c.over, c.status) = (None, true, 0);
        }
        let ctype = page.content_type.clone();
        let hs = headers
            .map(shorten)
            .filter(|(n, _)| {
                let kept = !relayed || error_page::kept_from_relayed(n);
                kept && !n.eq_ignore_ascii_case(b"content-type")
            })
            .chain(std::iter::once((&b"Content-Type"[..], &ctype[..])));
        self.send_whole(page.status, hs, None, &page.body)?;
        self.drop_body |= relayed;
        Ok(())
    }
}
