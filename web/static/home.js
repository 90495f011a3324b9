// On a phone the search form's filters fold behind their button (docs/stories.md, "Top stories"): the page
// is sent with them open, so that without this script they are simply shown; here they close at load on a
// narrow screen, unless the form came back with an error to fix. A tap on "Filters" opens them.
(function () {
  var fold = document.querySelector("details.filters-fold");
  if (fold && !fold.hasAttribute("data-keep-open") && window.matchMedia("(max-width: 40rem)").matches) {
    fold.open = false;
  }
})();
