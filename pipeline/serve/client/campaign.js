// pgx-corpus: what `campaign serve` adds to brat's web client (loaded by brat's page as a same-origin file;
// the page holds no inline code, see pipeline/serve/pages.py).  brat's own files are not changed.
head.ready(function() {
  var dispatcher = window.dispatcher;  // created by brat's boot script, whose head.ready callback runs first
  var MARK_TYPES = {'Done': true, 'Discard': true};
  var user = null;
  var seenUser = false;
  var current = {coll: null, doc: null};
  var marked = {key: null, marks: null};

  // --- the Guide link: the guide of the collection shown (brat's hash is #/collection/.../document)
  $('#pgx_guide_link').on('click', function() {
    var hash = window.location.hash.substr(1).split('?')[0];
    this.href = 'guide' + hash.substr(0, hash.lastIndexOf('/') + 1);
  });

  // --- brat's Login button: in the top bar whenever nobody is logged in (brat's menu shows it only while
  // the pointer is over the bar); back in brat's menu once someone is
  var authButton = $('#auth_button');
  var authHome = authButton.parent();
  var showLogin = function(visible) {
    if (visible) {
      authButton.insertAfter('#mainlogo').addClass('pgx-login-visible').css({'font-size': '70%', 'margin': '2px 8px'});
    } else if (authButton.hasClass('pgx-login-visible')) {
      authButton.removeClass('pgx-login-visible').css({'font-size': '', 'margin': ''}).prependTo(authHome);
    }
  };

  // --- after a login in this page: load the page again at the person's first collection (brat's client
  // keeps what it fetched before, e.g. the collection of the person who was logged in before)
  var goToFirstCollection = function() {
    dispatcher.post('ajax', [{action: 'getCollectionInformation', collection: '/'}, function(response) {
      var first = null;
      $.each(response.items || [], function(i, item) {
        if (first === null && item[0] === 'c' && item[2] !== '..') {
          first = item[2];
        }
      });
      var hash = first === null ? '#/' : '#/' + first + '/';
      window.history.replaceState(null, '', window.location.pathname + hash);
      window.location.reload();
    }]);
  };

  dispatcher.on('user', window, function(name) {
    if (seenUser && name && !user) {
      goToFirstCollection();
    }
    seenUser = true;
    user = name;
    showLogin(!name);
  });

  // --- the State column: after a save that adds or removes a Done or Discard mark, list the collection
  // again (brat's client lists a collection only when it enters it)
  var marksOf = function(sourceData) {
    var ids = [];
    $.each(sourceData.entities || [], function(i, entity) {
      if (MARK_TYPES[entity[1]]) {
        ids.push(entity[0] + ' ' + entity[1]);
      }
    });
    return ids.sort().join(',');
  };

  dispatcher.on('current', window, function(coll, doc) {
    current = {coll: coll, doc: doc};
  });

  dispatcher.on('newSourceData', window, function(sourceData) {
    if (!sourceData || !current.coll || !current.doc) {
      return;
    }
    var key = current.coll + current.doc;
    var marks = marksOf(sourceData);
    if (marked.key === key && marked.marks !== marks) {
      dispatcher.post('ajax', [{action: 'getCollectionInformation', collection: current.coll},
                               'collectionLoaded', {collection: current.coll, keep: true}]);
    }
    marked = {key: key, marks: marks};
  });

  // --- Ctrl-Z (Cmd-Z on a Mac): brat's Undo button (which serve puts back in brat's menu), outside text fields
  $(document).on('keydown', function(evt) {
    var isMac = navigator.platform.indexOf('Mac') === 0;
    if (evt.which !== 90 || !(isMac ? evt.metaKey : evt.ctrlKey) || evt.altKey || evt.shiftKey) {
      return;
    }
    var name = evt.target.nodeName.toLowerCase();
    var type = (evt.target.type || '').toLowerCase();
    if (name === 'textarea' || name === 'select' || (name === 'input' && (type === 'text' || type === 'password'))) {
      return;
    }
    evt.preventDefault();
    $('#undo_button').click();
  });
});
