// Starts Swagger UI (the vendored bundle, loaded just before) on the OpenAPI document the page
// names in #swagger-ui's data-url. A file of its own: the page's policy runs no inline script.
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-url"),
    domNode: root,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    deepLinking: true,
    // Nothing leaves for a validator service: the document is checked where it is made.
    validatorUrl: null,
    // Tags folded: a tag opens on a click (the larger documents render tag by tag).
    docExpansion: "none",
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    filter: true,
  });
})();
