/* Copy buttons: a button with data-copy="<id>" copies the text of the element <id> (an
   incident's statement) and says so in the aria-live element <id>-status. The clipboard API
   needs a secure context and the page's permission: without it (or when it refuses) the
   text is selected and copied with the older command, or left selected for Ctrl+C. */
(function () {
  'use strict';
  const timers = new Map();

  function select(element) {
    const range = document.createRange();
    range.selectNodeContents(element);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function copiedByCommand(element) {
    select(element);
    try {
      return document.execCommand('copy');
    } catch (err) {
      return false;
    }
  }

  async function copy(text, element) {
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(text);
        return 'Copied';
      } catch (err) {
        /* refused (no permission, no focus): fall back below */
      }
    }
    return copiedByCommand(element) ? 'Copied' : 'Selected: press Ctrl+C (⌘C) to copy';
  }

  function say(status, message) {
    if (!status) return;
    status.textContent = message;
    clearTimeout(timers.get(status));
    timers.set(status, setTimeout(() => { status.textContent = ''; }, 5000));
  }

  document.addEventListener('click', (event) => {
    const button = event.target.closest('button[data-copy]');
    if (!button) return;
    const target = document.getElementById(button.dataset.copy);
    if (!target) return;
    const status = document.getElementById(button.dataset.copy + '-status');
    copy(target.textContent, target).then((message) => say(status, message));
  });
})();
